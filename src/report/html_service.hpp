#pragma once
// The compare page's service view section (src/report/html_service.cpp), called by html_compare.cpp.
#include <string>

#include "kqual/core/json.hpp"

namespace kqual::report {

// <section id="service">: per profile, both sides' latency distributions as SVG quantile curves and
// the percentile table; a "not run" note where the document has no service view.
std::string compare_service_html(const json& results);

}  // namespace kqual::report
