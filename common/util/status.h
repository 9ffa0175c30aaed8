// status.h: the result of a kernel or engine call: ok, or a message a user can read
#pragma once

#include <string>
#include <utility>

namespace gvc {

class Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

}  // namespace gvc
