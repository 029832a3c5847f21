#include "config/settings.h"

#include "config/config.h"
#include "config/schema.h"
#include "text/text.h"

namespace sweepbench {

template <>
const std::vector<std::string>& names_of<DType>() {
  static const std::vector<std::string> names{"fp32", "bf16", "fp16"};
  return names;
}
template <>
const std::vector<std::string>& names_of<Device>() {
  static const std::vector<std::string> names{"auto", "cpu", "cuda"};
  return names;
}
template <>
const std::vector<std::string>& names_of<Exclusive>() {
  static const std::vector<std::string> names{"auto", "node", "shared"};
  return names;
}
template <>
const std::vector<std::string>& names_of<DataSource>() {
  static const std::vector<std::string> names{"synthetic", "tokens", "text"};
  return names;
}
template <>
const std::vector<std::string>& names_of<TokenDType>() {
  static const std::vector<std::string> names{"uint16", "uint32"};
  return names;
}
template <>
const std::vector<std::string>& names_of<Peft>() {
  static const std::vector<std::string> names{"none", "lora"};
  return names;
}
template <>
const std::vector<std::string>& names_of<KvCache>() {
  static const std::vector<std::string> names{"static", "dynamic", "none"};
  return names;
}

Settings Settings::of(const Value& c) {
  Settings s;
  for (const KeySpec& key : Schema::get().keys()) {
    if (key.read) key.read(s, config_at(c, key.path), c);
  }
  return s;
}

const Settings& Settings::defaults() {
  static const Settings s = Settings::of(resolve_config(Value::map()));
  return s;
}

}  // namespace sweepbench
