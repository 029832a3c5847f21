// What bench-plot's figures share (plot.cc, plot_points.cc, plot_figures.cc): reading the table's
// numbers and columns, and the one way each kind of text reaches a gnuplot script or its data file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "config/table.h"

namespace sweepbench {

// A finite number, or nullopt (empty, text, nan, inf).
std::optional<double> number(const std::string& text);

// The position of a column; Error(kInput) naming `option` and the columns (with the nearest).
size_t column_index(const CsvTable& t, const std::string& name, const std::string& option);

// Text as a gnuplot string: single-quoted, nothing expanded, on one line.
std::string gp_string(const std::string& s);
// Text in a comment line of the script.
std::string one_line(const std::string& s);
// Text as a field of the tab-separated data file.
std::string gp_data_text(const std::string& s);
// gnuplot's terminal for the figure's extension (.png, .svg, .pdf); Error(kInput) otherwise.
std::string terminal_for(const std::string& output);

}  // namespace sweepbench
