// error_of(f): runs f, which must throw sweepbench::Error, and returns the error so a test can
// check its exact text, location and kind.
#pragma once

#include <gtest/gtest.h>

#include <optional>

#include "text/error.h"

namespace sweepbench::testing {

template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a sweepbench::Error, but nothing was thrown";
  return Error::input(Mark{}, "", "<no error>");
}

}  // namespace sweepbench::testing
