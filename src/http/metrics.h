// What the HTTP layer counts for metrics (docs/metrics.md, decision 0023):
// answers by endpoint class, method and status, requests forwarded to the
// leader, and ACL denials. Plain numbers on the loop thread; the metrics
// handler (handlers/metrics.cc, the one file that sees prometheus-cpp)
// reads them at scrape time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/listen_types.h"

namespace tenure::http {

// The endpoint classes a request is counted under: Consul's first path
// segment after /v1/ (never the key or session id: bounded labels).
enum class Endpoint : std::uint8_t {
  kOther,  // no route (404) or "/"
  kKv,
  kTxn,
  kSession,
  kStatus,
  kAgent,
  kOperator,
  kAcl,
  kHealth,   // /v1/agent/health/*
  kMetrics,  // /v1/agent/metrics and /metrics
  kSnapshot,
  kTenure,  // tenure's own endpoints, /v1/tenure/* (the election history)
};
inline constexpr std::size_t kEndpointCount = 12;
std::string_view EndpointName(Endpoint endpoint);
Endpoint EndpointOf(std::string_view path);

// GET, PUT, DELETE, POST, OPTIONS, and anything else.
inline constexpr std::size_t kMethodCount = 6;
std::size_t MethodIndex(std::string_view method);
std::string_view MethodName(std::size_t index);

class HttpMetrics {
 public:
  explicit HttpMetrics(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }

  void CountAnswer(Endpoint endpoint, std::string_view method, int status);
  void CountForwarded(Endpoint endpoint) { ++forwarded_[static_cast<std::size_t>(endpoint)]; }

  struct StatusCount {
    int status;
    std::uint64_t count;
  };
  const std::vector<StatusCount>& answers(Endpoint endpoint, std::size_t method) const {
    return answers_[static_cast<std::size_t>(endpoint)][method];
  }
  std::uint64_t forwarded(Endpoint endpoint) const {
    return forwarded_[static_cast<std::size_t>(endpoint)];
  }
  std::uint64_t acl_denials() const { return acl_denials_; }

 private:
  bool enabled_;
  // A handful of statuses per (endpoint, method): a short list beats a map.
  std::array<std::array<std::vector<StatusCount>, kMethodCount>, kEndpointCount> answers_{};
  std::array<std::uint64_t, kEndpointCount> forwarded_{};
  std::uint64_t acl_denials_ = 0;  // answers with status 403
};

// Counts the answer of a forwarded request (the leader's) as it passes; a
// streamed answer is counted at its head.
class CountingResponder : public Responder {
 public:
  CountingResponder(std::shared_ptr<Responder> inner, HttpMetrics* metrics, Endpoint endpoint,
                    std::string method)
      : inner_(std::move(inner)),
        metrics_(metrics),
        endpoint_(endpoint),
        method_(std::move(method)) {}
  void Send(HttpResponse response) override {
    metrics_->CountAnswer(endpoint_, method_, response.status);
    inner_->Send(std::move(response));
  }
  bool closed() const override { return inner_->closed(); }
  void OnClose(std::function<void()> callback) override { inner_->OnClose(std::move(callback)); }
  void StartStream(int status, const listen::HeaderFields& headers) override {
    metrics_->CountAnswer(endpoint_, method_, status);
    inner_->StartStream(status, headers);
  }
  void SendChunk(std::string_view bytes) override { inner_->SendChunk(bytes); }
  void EndStream() override { inner_->EndStream(); }
  std::size_t unsent_bytes() const override { return inner_->unsent_bytes(); }
  void OnDrained(std::function<void()> callback) override {
    inner_->OnDrained(std::move(callback));
  }

 private:
  std::shared_ptr<Responder> inner_;
  HttpMetrics* metrics_;
  Endpoint endpoint_;
  std::string method_;
};

}  // namespace tenure::http
