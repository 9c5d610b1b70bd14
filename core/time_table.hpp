// A scalar deck input over simulated time: a constant, or a piecewise-linear table of knots
// (t_i, v_i) (docs/deck.md "Time-varying inputs"). Boundary values and fluxes, convective
// ambients and source strengths take one (io/config.hpp: Config::boundary_tables,
// Shape::value_table / amplitude_table). Plain C++, header only.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace heatsolve {

class TimeTable {
 public:
  struct Knot {
    double t = 0, v = 0;
    bool operator==(const Knot& o) const { return t == o.t && v == o.v; }
  };

  // The constant 0.
  TimeTable() = default;
  // The constant `value`: one knot (0, value).
  explicit TimeTable(double value) : knots_{{0.0, value}} {}
  // Piecewise linear through `knots`: at least one, every t and v finite, t >= 0 and strictly
  // increasing. Throws std::invalid_argument otherwise (the deck reports such tables with
  // file:line:col before they get here).
  explicit TimeTable(std::vector<Knot> knots) : knots_(std::move(knots)) {
    if (knots_.empty()) throw std::invalid_argument("TimeTable: no knots");
    for (std::size_t i = 0; i < knots_.size(); ++i) {
      const Knot& k = knots_[i];
      if (!std::isfinite(k.t) || !std::isfinite(k.v) || k.t < 0)
        throw std::invalid_argument("TimeTable: knot " + std::to_string(i) +
                                    " is not finite or has t < 0");
      if (i > 0 && !(k.t > knots_[i - 1].t))
        throw std::invalid_argument("TimeTable: knot times must increase strictly (knot " +
                                    std::to_string(i) + ")");
    }
  }

  // The value at time t: v_0 for t <= t_0, v_n for t >= t_n (held), else linear between the
  // knots around t. Exactly v_i at t = t_i (the segment starting at t_i is used, where the
  // interpolation weight is 0).
  double at(double t) const {
    if (knots_.empty()) return 0.0;
    if (!(t > knots_.front().t)) return knots_.front().v;  // also NaN: the first value
    if (t >= knots_.back().t) return knots_.back().v;
    // The last knot with t_i <= t.
    const auto next = std::upper_bound(knots_.begin(), knots_.end(), t,
                                       [](double x, const Knot& k) { return x < k.t; });
    const Knot& a = *(next - 1);
    const Knot& b = *next;
    const double w = (t - a.t) / (b.t - a.t);
    return a.v + w * (b.v - a.v);
  }

  // Whether at(t) is the same for every t (one knot, or all values equal).
  bool constant() const {
    for (const Knot& k : knots_)
      if (k.v != knots_.front().v) return false;
    return true;
  }

  // The knots in increasing t; a constant made from a number: {(0, value)}; the default
  // constant 0: empty.
  const std::vector<Knot>& knots() const { return knots_; }

  bool operator==(const TimeTable& o) const { return knots_ == o.knots_; }
  bool operator!=(const TimeTable& o) const { return !(*this == o); }

 private:
  std::vector<Knot> knots_;
};

}  // namespace heatsolve
