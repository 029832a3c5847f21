// What the post-processing tools' main functions share: parse the options, answer --help, run the
// body, and turn errors into a message and an exit code (docs/exit-codes.md); and a fraction
// option's value.
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

// "5%" or "0.05" as 0.05; Error(kInput) naming `option` for anything else (negative, not a
// number, a bare number above 1: "5" would be 500%). --margin and --fail-on's PCT, bench-history
// check's too; an `option` ending in ':' ("--fail-on METRIC:") is named with the text joined on.
double parse_fraction(const std::string& text, const std::string& option);

}  // namespace sweepbench
