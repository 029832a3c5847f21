// One register-by-name pattern for everything a config or option names: launchers, container
// platforms, workloads (and the entries a later issue registers). An entry is a name and a
// factory; an unknown name is an Error naming the known ones, so every such key's error reads
// alike and the list in it is always the registered one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

template <class T>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;
  struct Entry {
    std::string name;
    Factory make;
  };

  // `key`: the config key (or option) whose value names an entry, for errors ("launch.launcher");
  // `what`: what an entry is ("launcher"); `also_valid`: names the key accepts that are no entry
  // (container.runtime's "none").
  Registry(std::string key, std::string what, std::vector<Entry> entries,
           std::vector<std::string> also_valid = {})
      : key_(std::move(key)),
        what_(std::move(what)),
        entries_(std::move(entries)),
        also_valid_(std::move(also_valid)) {}

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }

  bool has(const std::string& name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return true;
    }
    return false;
  }

  // A new instance of the entry `name`; Error(kInput) naming the known ones when there is none.
  std::unique_ptr<T> make(const std::string& name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return e.make();
    }
    std::vector<std::string> valid = also_valid_;
    for (const Entry& e : entries_) valid.push_back(e.name);
    // A command-line option is named with its value ("--kind pie: error: ..."), a config key
    // as the key of the error.
    bool option = key_.rfind("--", 0) == 0;
    throw Error::input(Mark::in(option ? key_ + " " + name : key_), option ? "" : key_,
                       "unknown " + what_ + " '" + name + "'", "use one of " + join(valid, ", "));
  }

 private:
  std::string key_, what_;
  std::vector<Entry> entries_;
  std::vector<std::string> also_valid_;
};

}  // namespace sweepbench
