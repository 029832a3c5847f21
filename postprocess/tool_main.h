// What bench-extract's and bench-plot's main functions share: parse the options, answer --help,
// run the body, and turn errors into a message and an exit code (docs/exit-codes.md).
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace sweepbench {

int run_tool(const std::string& tool, const std::vector<std::string>& args,
             const boost::program_options::options_description& desc, const char* usage,
             std::ostream& out, std::ostream& err,
             const std::function<int(const boost::program_options::variables_map&)>& body,
             const boost::program_options::positional_options_description* positional = nullptr);

}  // namespace sweepbench
