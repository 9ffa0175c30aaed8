// analyse.cpp: lambda of the mode decision
#include "common/h264enc/analyse.h"

#include <cmath>

namespace gvc::h264 {

int lambda_for_qp(int qp) {
  int l = int(std::lround(std::sqrt(0.85 * std::pow(2.0, (qp - 12) / 3.0))));
  return l < 1 ? 1 : l;
}

}  // namespace gvc::h264
