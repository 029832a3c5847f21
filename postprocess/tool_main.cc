#include "postprocess/tool_main.h"

#include "text/error.h"
#include "text/exit_codes.h"

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

}  // namespace sweepbench
