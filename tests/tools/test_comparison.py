"""The tables of `compare`: a difference is starred only where every test that applies finds it, and the table, the
JSON and the CSV give each figure in its own place."""
from nmtkit.metrics.significance import Difference, Interval, MetricComparison, SystemScores
from nmtkit.tools.comparison import CSV_HEADER, HEADER, as_record, comparison_rows, csv_rows


def comparison(metric: str) -> MetricComparison:
    systems = [SystemScores(name, [f"{name}.txt"], [Interval(score, score, 0.5)])
               for name, score in (("base", 20.0), ("boot", 21.0), ("both", 23.0))]
    return MetricComparison(metric, "sig", systems, {"boot": Difference(1.0, 0.8, 0.01, 0.3),
                                                     "both": Difference(3.0, 0.9, 0.02, 0.04)})


def test_a_difference_is_significant_where_each_test_that_applies_finds_it():
    assert Difference(1.0, 0.5, 0.01, 0.02).significant() and Difference(1.0, 0.5, 0.01).significant()
    assert not Difference(1.0, 0.5, 0.01, 0.5).significant() and not Difference(1.0, 0.5, 0.5, 0.01).significant()
    assert not Difference(1.0, 0.5, 0.04, 0.04).significant(0.01)


def test_the_table_json_and_csv_give_each_figure_in_its_place():
    result = comparison("ter")
    header, rows = comparison_rows(result)
    delta, p_boot, p_rand = (HEADER.index(name) for name in ("delta", "p boot", "p AR"))
    assert [row[delta] for row in rows] == ["-", "+1.00", "+3.00*"]  # (bootstrap alone: no star)
    assert (rows[1][p_boot], rows[1][p_rand]) == ("0.0100", "0.3000")
    record = as_record(result)
    assert record["higher_is_better"] is False and as_record(comparison("bleu"))["higher_is_better"] is True
    boot = record["systems"][1]["against_first"]
    assert (boot["p_bootstrap"], boot["p_randomisation"], boot["significant"]) == (0.01, 0.3, False)
    table = [dict(zip(CSV_HEADER, row)) for row in csv_rows(result, 0.05)]
    assert (table[1]["p_bootstrap"], table[1]["p_randomisation"]) == (0.01, 0.3)
    assert [row["significant"] for row in table] == ["", False, True]
