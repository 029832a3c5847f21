// bench-extract's operations on a whole table: --group-repeats, --drop-constant, --where, --best
// and --pareto, and the cells they read (cell_number, row_ok, declared_unit).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"
#include "postprocess/extract_table.h"

namespace sweepbench {

// One row per point over its repeats (rows that differ only in tag, index and repeat): `repeats`
// counts them, each metric becomes the mean over the ok repeats and gains a `_std` column (sample
// standard deviation). The status is ok when every repeat is; otherwise the first other status,
// with the reason saying how many repeats were ok.
void group_repeats(ExtractTable* table);

// Leaves out the columns whose value is the same in every row, except `keep` and the identity
// columns (tag, status).
void drop_constant_columns(ExtractTable* table, const std::vector<std::string>& keep);

// A row's cell as a finite number: a number, or text that reads as one (a CSV's cells); nullopt
// otherwise. And whether the row's status is ok.
std::optional<double> cell_number(const std::map<std::string, Value>& row,
                                  const std::string& column);
bool row_ok(const std::map<std::string, Value>& row);

// --where COLUMN OP VALUE (OP one of <, <=, >, >=, =, !=): numbers compare as numbers, anything
// else as text (= and != only). A row without the column does not hold.
struct RowCondition {
  std::string column, op, value;
};
RowCondition parse_condition(const std::string& text);  // Error(kInput) naming --where
bool holds(const std::map<std::string, Value>& row, const RowCondition& condition);
void filter_rows(ExtractTable* table, const std::vector<RowCondition>& conditions);

// The unit a command declared for `metric` (the first row whose units map names it); "" when
// none did. With the name it gives the metric's direction (metrics/summary.h's higher_is_better).
std::string declared_unit(const std::vector<std::map<std::string, Value>>& rows,
                          const std::string& metric);

// --best METRIC [--per KEYS]: of the ok rows with the metric, the best (the metric's direction,
// metrics/summary.h), one per group of the --per keys' values; ties keep the first.
void keep_best(ExtractTable* table, const std::string& metric, const std::vector<std::string>& per);

// --pareto M1,M2,... [--per KEYS]: the ok rows no other row of their group dominates. A row
// dominates another when it is at least as good in every metric and better in one beyond the
// intervals: its whole interval (<metric>_ci_low, _ci_high, where the row has them) is better
// than the other's; without intervals, better.
void keep_pareto_front(ExtractTable* table, const std::vector<std::string>& metrics,
                       const std::vector<std::string>& per);

}  // namespace sweepbench
