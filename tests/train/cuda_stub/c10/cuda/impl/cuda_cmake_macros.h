// Stand-in for the header a CUDA build of libtorch generates; Debian's CPU-only libtorch ships the
// CUDA headers without it. Used only by the trainer_compiles_with_cuda test.
#pragma once
