// A store's URL as messages show it: the password in it (USER:PASSWORD@, password=...) as ***.
// One spelling for bench-sweep's --history and bench-history's --store.
#pragma once

#include <string>

namespace sweepbench {

std::string redacted_url(const std::string& url);

}  // namespace sweepbench
