// MLflow's REST API over HTTP(S), through libcurl (Debian's libcurl4-openssl: TLS, proxies from
// $https_proxy and $no_proxy, as every tool on the node): the one file that includes curl.
//
// The server and its credentials are read as MLflow's own client reads them: the tracking URI
// (http:// or https://, a path prefix kept), $MLFLOW_TRACKING_TOKEN (a bearer token) or
// $MLFLOW_TRACKING_USERNAME and $MLFLOW_TRACKING_PASSWORD (basic), $MLFLOW_TRACKING_INSECURE_TLS
// and $MLFLOW_TRACKING_SERVER_CERT_PATH. A password never appears in a message.
#pragma once

#include <memory>
#include <string>

#include "postprocess/history_mlflow.h"

namespace sweepbench {

class MlflowHttp : public MlflowApi {
 public:
  // `option` names where the URI came from (--tracking-uri, $MLFLOW_TRACKING_URI) in errors:
  // Error(kInput) for one that is not an http(s) URL.
  MlflowHttp(const std::string& tracking_uri, const std::string& option);
  ~MlflowHttp() override;
  MlflowResponse call(const std::string& method, const std::string& endpoint,
                      const Value& body) override;
  std::string describe() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sweepbench
