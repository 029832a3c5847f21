#include "postprocess/tool_main.h"

#include <cmath>
#include <optional>
#include <sstream>

#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {

int run_tool(const std::string& tool, const std::vector<std::string>& args,
             const boost::program_options::options_description& desc, const char* usage,
             std::ostream& out, std::ostream& err,
             const std::function<int(const boost::program_options::variables_map&)>& body,
             const boost::program_options::positional_options_description* positional) {
  namespace po = boost::program_options;
  try {
    po::variables_map vm;
    po::command_line_parser parser(args);
    parser.options(desc);
    if (positional != nullptr) parser.positional(*positional);
    po::store(parser.run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      out << usage << desc;
      return kExitOk;
    }
    return body(vm);
  } catch (const Error& e) {
    err << error_line(e, tool) << "\n";
    return exit_code_for(e.kind());
  } catch (const po::error& e) {
    err << tool << ": error: " << e.what() << " (" << tool << " --help lists the options)\n";
    return kExitUsage;
  }
}

double parse_fraction(const std::string& text, const std::string& option) {
  // "--margin 5" or, for a gate's "METRIC:PCT", "--fail-on METRIC:5".
  const std::string where =
      !option.empty() && option.back() == ':' ? option + text : option + " " + text;
  std::string t = text;
  bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  std::optional<double> v = parse_double(t);
  if (!v || !std::isfinite(*v) || *v < 0) {
    throw Error::input(Mark::in(where), "", "is not a fraction or a percentage",
                       "write e.g. 5% or 0.05");
  }
  // A bare 5 is a fraction, 500%: almost always a typo for 5%, and a gate that never fires.
  if (!percent && *v > 1) {
    std::ostringstream hundredfold;
    hundredfold << *v * 100;
    throw Error::input(
        Mark::in(where), "", "is a fraction above 1 (" + t + " = " + hundredfold.str() + "%)",
        "write " + t + "% for " + t + " per cent, or " + hundredfold.str() + "% if that is meant");
  }
  return percent ? *v / 100 : *v;
}

}  // namespace sweepbench
