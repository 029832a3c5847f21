// The root attributes of a rank file, the columns of its steps table and the fields of its eval,
// memory and samples groups, listed once: the writer
// (rank_file.cc) writes them in this order and the reader (rank_reader.cc) reads them from this
// list, so a field added here is both written and read (docs/results-format.md lists them for
// people; a test reads a file with h5py against that page).
//
// `scope` says who needs the field when bench-extract reads a point (RankReadScope::kSummary):
// every rank's file (kEvery), only rank 0's, which carries what the whole run shares (kLead), or
// nobody but a full read (kFull). `since_within_schema`: added within a schema version, so an older
// file may lack it and that is no problem.
#pragma once

#include <cstdint>
#include <string>

#include "metrics/rank_result.h"

namespace sweepbench {

enum class FieldScope { kEvery, kLead, kFull };

template <class T>
struct RankAttr {
  const char* name;
  T RankResult::*field;
  FieldScope scope;
  bool since_within_schema = false;
};

using TextAttr = RankAttr<std::string>;
using IntAttr = RankAttr<std::int64_t>;
using RealAttr = RankAttr<double>;

// status, rank and world_size place a file in its run and are checked on their own (they are
// read first, whatever the scope); schema_version is the file's, not the result's.
inline constexpr TextAttr kTextAttrs[] = {
    {"benchmark", &RankResult::benchmark, FieldScope::kEvery, true},
    {"config_yaml", &RankResult::config_yaml, FieldScope::kLead},
    {"config_hash", &RankResult::config_hash, FieldScope::kLead},
    {"tag", &RankResult::tag, FieldScope::kFull},
    {"run_id", &RankResult::run_id, FieldScope::kEvery, true},
    {"profile_trace", &RankResult::profile_trace, FieldScope::kLead, true},
    {"hostname", &RankResult::hostname, FieldScope::kFull},
    {"device_type", &RankResult::device_type, FieldScope::kLead},
    {"device_name", &RankResult::device_name, FieldScope::kFull},
    {"sweepbench_version", &RankResult::sweepbench_version, FieldScope::kFull},
    {"torch_version", &RankResult::torch_version, FieldScope::kFull},
    {"cuda_version", &RankResult::cuda_version, FieldScope::kFull},
    {"nccl_version", &RankResult::nccl_version, FieldScope::kFull},
    {"mpi_version", &RankResult::mpi_version, FieldScope::kFull},
    {"omp_wait_policy", &RankResult::omp_wait_policy, FieldScope::kFull, true},
    {"container_runtime", &RankResult::container_runtime, FieldScope::kFull},
    {"container_image", &RankResult::container_image, FieldScope::kFull},
    {"container_digest", &RankResult::container_digest, FieldScope::kFull},
    {"container_env_kept", &RankResult::container_env_kept, FieldScope::kFull, true},
    {"slurm_job_id", &RankResult::slurm_job_id, FieldScope::kFull},
    {"slurm_array_job_id", &RankResult::slurm_array_job_id, FieldScope::kFull},
    {"slurm_array_task_id", &RankResult::slurm_array_task_id, FieldScope::kFull},
    {"slurm_step_id", &RankResult::slurm_step_id, FieldScope::kFull},
    {"start_time", &RankResult::start_time, FieldScope::kFull},
    {"end_time", &RankResult::end_time, FieldScope::kFull},
    {"reason", &RankResult::reason, FieldScope::kEvery},
    {"rank_status", &RankResult::rank_status, FieldScope::kLead},
    {"peak_tflops_source", &RankResult::peak_tflops_source, FieldScope::kFull},
    {"parameter_sha256", &RankResult::parameter_sha256, FieldScope::kFull},
};

inline constexpr IntAttr kIntAttrs[] = {
    {"local_rank", &RankResult::local_rank, FieldScope::kFull},
    {"device_count", &RankResult::device_count, FieldScope::kFull},
    {"threads", &RankResult::threads, FieldScope::kFull},
    {"threads_planned", &RankResult::threads_planned, FieldScope::kFull, true},
    {"parameter_count", &RankResult::parameter_count, FieldScope::kLead},
    {"zero_stage", &RankResult::zero_stage, FieldScope::kLead, true},
    {"trainable_parameters", &RankResult::trainable_parameters, FieldScope::kLead, true},
    {"tensor_parallel", &RankResult::tensor_parallel, FieldScope::kLead, true},
    {"offload_optimizer", &RankResult::offload_optimizer, FieldScope::kLead, true},
    {"rank_parameters", &RankResult::rank_parameters, FieldScope::kLead, true},
    {"model_state_bytes", &RankResult::model_state_bytes, FieldScope::kFull, true},
    {"steps_planned", &RankResult::steps_planned, FieldScope::kFull},
    {"warmup_steps", &RankResult::warmup_steps, FieldScope::kFull},
    {"seq_len", &RankResult::seq_len, FieldScope::kLead},
    {"micro_batch", &RankResult::micro_batch, FieldScope::kLead},
    {"grad_accum", &RankResult::grad_accum, FieldScope::kLead},
};

inline constexpr RealAttr kRealAttrs[] = {
    {"flops_per_token", &RankResult::flops_per_token, FieldScope::kLead},
    {"flops_per_token_6n", &RankResult::flops_per_token_6n, FieldScope::kFull},
    {"peak_tflops", &RankResult::peak_tflops, FieldScope::kLead},
    {"comm_bytes_per_step", &RankResult::comm_bytes_per_step, FieldScope::kEvery, true},
    {"cpu_others_s", &RankResult::cpu_others_s, FieldScope::kFull, true},
    {"cpu_shared", &RankResult::cpu_shared, FieldScope::kEvery, true},
    {"cpus_busy_at_start", &RankResult::cpus_busy_at_start, FieldScope::kFull, true},
};

// The columns of the steps table, in the file's order (docs/results-format.md). Each is one field
// of StepRecord: a double, an integer, or a flag stored as uint8. `summary`: a summary read
// (RankReadScope::kSummary) needs it; a full read takes them all.
struct StepColumn {
  const char* name;
  double StepRecord::*real;
  std::int64_t StepRecord::*integer;
  bool StepRecord::*flag;
  bool summary;
};

inline constexpr StepColumn kStepColumns[] = {
    {"step", nullptr, &StepRecord::step, nullptr, false},
    {"total_s", &StepRecord::total_s, nullptr, nullptr, true},
    {"data_s", &StepRecord::data_s, nullptr, nullptr, true},
    {"forward_s", &StepRecord::forward_s, nullptr, nullptr, true},
    {"backward_s", &StepRecord::backward_s, nullptr, nullptr, true},
    {"comm_s", &StepRecord::comm_s, nullptr, nullptr, true},
    {"optimizer_s", &StepRecord::optimizer_s, nullptr, nullptr, true},
    {"tokens", nullptr, &StepRecord::tokens, nullptr, false},
    {"samples", nullptr, &StepRecord::samples, nullptr, false},
    {"loss", &StepRecord::loss, nullptr, nullptr, true},
    {"lr", &StepRecord::lr, nullptr, nullptr, false},
    {"grad_norm", &StepRecord::grad_norm, nullptr, nullptr, false},
    {"loss_scale", &StepRecord::loss_scale, nullptr, nullptr, false},
    {"skipped", nullptr, nullptr, &StepRecord::skipped, false},
    {"measured", nullptr, nullptr, &StepRecord::measured, true},
};

// The eval group's attributes and series (its `ran` flag aside, stored as an integer), and the
// samples group's series (device_bytes aside: a summary read takes it only where NVML measured
// it). `scope` as for the root attributes.
template <class Owner, class T>
struct GroupField {
  const char* name;
  T Owner::*field;
  FieldScope scope;
};

inline constexpr GroupField<EvalSummary, std::int64_t> kEvalIntAttrs[] = {
    {"steps", &EvalSummary::steps, FieldScope::kFull},
    {"samples", &EvalSummary::samples, FieldScope::kEvery},
    {"tokens", &EvalSummary::tokens, FieldScope::kFull},
};
inline constexpr GroupField<EvalSummary, double> kEvalRealAttrs[] = {
    {"loss", &EvalSummary::loss, FieldScope::kLead},
    {"seconds", &EvalSummary::seconds, FieldScope::kEvery},
};
inline constexpr GroupField<EvalSummary, std::vector<double>> kEvalSeries[] = {
    {"batch_loss", &EvalSummary::batch_loss, FieldScope::kFull},
    {"batch_s", &EvalSummary::batch_s, FieldScope::kFull},
};
inline constexpr GroupField<SampleSeries, std::vector<double>> kSampleRealSeries[] = {
    {"time_s", &SampleSeries::time_s, FieldScope::kFull},
    {"cpu_percent", &SampleSeries::cpu_percent, FieldScope::kEvery},
    {"ram_used_mb", &SampleSeries::ram_used_mb, FieldScope::kEvery},
};
inline constexpr GroupField<SampleSeries, std::vector<std::int64_t>> kSampleIntSeries[] = {
    {"device_bytes", &SampleSeries::device_bytes, FieldScope::kEvery},
    {"rss_bytes", &SampleSeries::rss_bytes, FieldScope::kFull},
};

// The memory group's byte columns, one value per stage (its `stage` names beside them). A summary
// read of a rank other than 0 needs only the peaks (mem_peak_bytes).
inline constexpr GroupField<StageMemory, std::int64_t> kMemoryColumns[] = {
    {"begin_bytes", &StageMemory::begin, FieldScope::kLead},
    {"end_bytes", &StageMemory::end, FieldScope::kLead},
    {"peak_bytes", &StageMemory::peak, FieldScope::kEvery},
};
// Columns later files have: a file without them reads as not counted (-1).
inline constexpr GroupField<StageMemory, std::int64_t> kMemoryAllocColumns[] = {
    {"alloc_end_bytes", &StageMemory::alloc_end, FieldScope::kLead},
    {"alloc_peak_bytes", &StageMemory::alloc_peak, FieldScope::kEvery},
};

}  // namespace sweepbench
