#include "postprocess/history_mlflow_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "config/yaml_io.h"
#include "text/error.h"
#include "text/redact.h"

namespace sweepbench {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

size_t append_body(char* data, size_t size, size_t n, void* to) {
  static_cast<std::string*>(to)->append(data, size * n);
  return size * n;
}

// The query of a GET: the body's scalar fields, each escaped.
std::string query_of(CURL* curl, const Value& body) {
  std::string query;
  for (const Value::Entry& e : body.entries()) {
    if (!e.value.is_scalar()) continue;
    const std::string value = scalar_text(e.value);
    char* k = curl_easy_escape(curl, e.key.data(), static_cast<int>(e.key.size()));
    char* v = curl_easy_escape(curl, value.data(), static_cast<int>(value.size()));
    query += (query.empty() ? "?" : "&") + std::string(k ? k : "") + "=" + (v ? v : "");
    curl_free(k);
    curl_free(v);
  }
  return query;
}

// What a tracking URI that is not an MLflow server's address is: "" when it is one.
std::string uri_problem(const std::string& uri) {
  CURLU* u = curl_url();
  std::string problem;
  if (curl_url_set(u, CURLUPART_URL, uri.c_str(), 0) != CURLUE_OK) {
    problem = "is not a URL";
  } else {
    char* scheme = nullptr;
    char* host = nullptr;
    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    const std::string s = scheme ? scheme : "";
    if (s != "http" && s != "https") {
      problem =
          "is not an http:// or https:// URL (MLflow's databricks, file and database "
          "URIs are not a server's REST API)";
    } else if (host == nullptr || *host == '\0') {
      problem = "names no host";
    }
    curl_free(scheme);
    curl_free(host);
  }
  curl_url_cleanup(u);
  return problem;
}

}  // namespace

struct MlflowHttp::State {
  std::string base;    // the URI without a trailing /
  std::string option;  // where it came from: --tracking-uri, $MLFLOW_TRACKING_URI
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
};

MlflowHttp::MlflowHttp(const std::string& tracking_uri, const std::string& option)
    : state_(std::make_unique<State>()) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (const std::string problem = uri_problem(tracking_uri); !problem.empty()) {
    throw Error::input(Mark::in(option + " " + redacted_url(tracking_uri)), "", problem,
                       "give the tracking server's address, e.g. --tracking-uri "
                       "http://127.0.0.1:5000");
  }
  state_->base = tracking_uri;
  state_->option = option;
  while (!state_->base.empty() && state_->base.back() == '/') state_->base.pop_back();
  state_->curl = curl_easy_init();
  if (state_->curl == nullptr) throw Error(ErrorKind::kIo, Mark::in(option), "", "libcurl failed");
  CURL* c = state_->curl;
  state_->headers = curl_slist_append(state_->headers, "Content-Type: application/json");
  state_->headers = curl_slist_append(state_->headers, "Accept: application/json");
  if (const std::string token = env("MLFLOW_TRACKING_TOKEN"); !token.empty()) {
    // libcurl sends a header as it is given: a line break in the token would add headers.
    if (std::any_of(token.begin(), token.end(),
                    [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
      throw Error::input(Mark::in("$MLFLOW_TRACKING_TOKEN"), "",
                         "holds a control character (a line break?)",
                         "set it to the token alone, on one line");
    }
    state_->headers =
        curl_slist_append(state_->headers, ("Authorization: Bearer " + token).c_str());
  } else if (!env("MLFLOW_TRACKING_USERNAME").empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, env("MLFLOW_TRACKING_USERNAME").c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, env("MLFLOW_TRACKING_PASSWORD").c_str());
  }
  const std::string insecure = env("MLFLOW_TRACKING_INSECURE_TLS");
  if (insecure == "true" || insecure == "True" || insecure == "1") {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (const std::string ca = env("MLFLOW_TRACKING_SERVER_CERT_PATH"); !ca.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, state_->headers);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "sweepbench-bench-history");
  // Only http(s): a URL's scheme is the user's, and libcurl knows many more.
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
}

MlflowHttp::~MlflowHttp() {
  if (state_->curl) curl_easy_cleanup(state_->curl);
  curl_slist_free_all(state_->headers);
}

std::string MlflowHttp::describe() const { return redacted_url(state_->base); }

MlflowResponse MlflowHttp::call(const std::string& method, const std::string& endpoint,
                                const Value& body) {
  CURL* c = state_->curl;
  const bool get = method == "GET";
  const std::string url =
      state_->base + "/api/2.0/mlflow/" + endpoint + (get ? query_of(c, body) : "");
  const std::string payload = get ? "" : emit_json(body, -1);
  // A server that is starting, restarting or rate-limiting (429, 502, 503, 504) did not take
  // the request: it is asked again, after 1, 2 and 4 s. Nothing else is repeated, so that no
  // run is created twice.
  for (int attempt = 0;; ++attempt) {
    std::string received;
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &received);
    if (get) {
      curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.c_str());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    }
    char detail[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    const CURLcode rc = curl_easy_perform(c);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
    if (rc != CURLE_OK) {
      const std::string why = *detail ? detail : curl_easy_strerror(rc);
      throw Error(
          ErrorKind::kIo, Mark::in(state_->option + " " + describe()), "",
          "cannot reach the MLflow tracking server (" + endpoint + "): " + redacted_url(why),
          "start it, or check the address and $https_proxy/$no_proxy; on a node "
          "without the network, export with --offline FILE and send it later with "
          "--sync FILE from one that reaches the server");
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if ((status == 429 || status == 502 || status == 503 || status == 504) && attempt < 3) {
      std::this_thread::sleep_for(std::chrono::seconds(1 << attempt));
      continue;
    }
    MlflowResponse r;
    r.http_status = status;
    r.text = received.substr(0, 1000);
    try {
      r.body = parse_json_value(received, url);
    } catch (const Error&) {
      r.body = Value::null();
    }
    return r;
  }
}

}  // namespace sweepbench
