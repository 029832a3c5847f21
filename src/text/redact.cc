#include "text/redact.h"

namespace sweepbench {

std::string redacted_url(const std::string& url) {
  std::string shown = url;
  // scheme://USER:PASSWORD@HOST
  const size_t scheme = shown.find("://");
  const size_t at = shown.find('@');
  if (scheme != std::string::npos && at != std::string::npos && at > scheme) {
    const size_t colon = shown.find(':', scheme + 3);
    if (colon != std::string::npos && colon < at) shown.replace(colon + 1, at - colon - 1, "***");
  }
  // ?password=... or &password=...
  for (size_t p = shown.find("password="); p != std::string::npos;
       p = shown.find("password=", p + 1)) {
    const size_t from = p + 9;
    const size_t to = shown.find('&', from);
    shown.replace(from, (to == std::string::npos ? shown.size() : to) - from, "***");
  }
  return shown;
}

}  // namespace sweepbench
