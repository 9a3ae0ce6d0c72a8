// Interpolation in a measured profile's tables: piecewise linear along each axis (bilinear in a
// grid cell), and beyond an axis's ends the outermost segment extended as a straight line.
//
// Why these: a step's time on an executor is close to linear in the number of sequences and in
// the context they attend to (and bilinear in the two: every sequence reads its own context), so
// bilinear cells reproduce it exactly where it is, and a dense enough grid follows the curvature
// where it is not (a chunk's attention to itself grows with the square of its length). Linear
// extension beyond the grid keeps the measured slope, which is what more sequences or a longer
// context cost, rather than clamping to the edge (which would make a larger step free).
#pragma once

#include <vector>

#include "sim/step_profile.h"

namespace pagedllm::sim {

// values[i] at axis[i] (axis ascending, at least one point); one point: the constant.
double interpolate(const std::vector<double>& axis, const std::vector<double>& values, double x);

// grid.seconds at (row, column), bilinear in the cell around the point (the edge cell beyond the
// grid). Not floored: callers decide what a negative extrapolation means.
double interpolate(const ProfileGrid& grid, double row, double column);

}  // namespace pagedllm::sim
