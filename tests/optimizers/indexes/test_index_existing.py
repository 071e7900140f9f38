"""The unused and duplicate index finder on golden cases: what it proposes to drop, why, and what it never
touches (unique and primary-key indexes, protected names, partial or other-method look-alikes)."""

from advisor.core.domain import DropIndexChange, IndexInfo
from optimizers.indexes.existing import find_drops, shape


def ix(name, keys, scans=3, unique=False, primary=False, table="t", method="btree", include=(), where=""):
    """An index as the catalog describes it: ``keys`` like ``"a, b DESC"`` (a key with parentheses is an
    expression), and its definition text for display."""
    u = "UNIQUE " if unique else ""
    elements = [k.strip() for k in keys.split(", ")]
    columns = tuple(k if "(" in k else k.split()[0] for k in elements)
    options = tuple("" if "(" in k else " ".join(k.split()[1:]) for k in elements)
    body = f"({keys})" + (f" INCLUDE ({', '.join(include)})" if include else "") + (f" WHERE {where}" if where else "")
    return IndexInfo("public", table, name, f"CREATE {u}INDEX {name} ON public.{table} USING {method} {body}",
                     16384, scans, unique, primary, method, columns, options, tuple(include), where,
                     tuple("(" in k for k in elements))


def drops(indexes, **kw):
    return {d.name: d.why for d in find_drops(indexes, **kw)}


def test_unused_index_is_dropped_with_the_stats_period():
    found = find_drops([ix("t_pkey", "id", scans=0, unique=True, primary=True), ix("t_c", "c", scans=0),
                        ix("t_d", "d", scans=12)], since="2026-11-20 08:00 UTC")
    assert found == [DropIndexChange("public", "t", "t_c", "CREATE INDEX t_c ON public.t USING btree (c)",
                                     "unused: 0 scans since 2026-11-20 08:00 UTC")]
    assert drops([ix("t_c", "c", scans=0)]) == {"t_c": "unused: 0 scans since the statistics were last reset"}


def test_prefix_duplicate_names_the_index_that_covers_it():
    assert drops([ix("t_a", "a"), ix("t_a_b", "a, b"), ix("t_b", "b")]) == \
        {"t_a": "covered by t_a_b (its columns are a prefix of it)"}
    # a chain: the reason names the survivor, not an index that goes too
    assert drops([ix("t_a", "a"), ix("t_a_b", "a, b"), ix("t_a_b_c", "a, b, c")]) == \
        {"t_a": "covered by t_a_b_c (its columns are a prefix of it)",
         "t_a_b": "covered by t_a_b_c (its columns are a prefix of it)"}


def test_identical_twins_keep_one_the_better_scanned():
    assert drops([ix("t_x1", "a, b", scans=1), ix("t_x2", "a, b", scans=9)]) == \
        {"t_x1": "covered by t_x2 (same definition)"}
    assert drops([ix("t_x2", "a"), ix("t_x1", "a")]) == {"t_x2": "covered by t_x1 (same definition)"}
    assert drops([ix("t_y", "a", scans=0), ix("t_y_uq", "a", unique=True)]) == \
        {"t_y": "unused: 0 scans since the statistics were last reset; covered by t_y_uq (same definition)"}


def test_unique_primary_and_protected_indexes_are_never_dropped():
    indexes = [ix("t_pkey", "a", scans=0, unique=True, primary=True), ix("t_a_uq", "a", scans=0, unique=True),
               ix("t_a_b_uq", "a, b", scans=0, unique=True), ix("t_excl", "c", scans=0, method="gist")]
    assert drops(indexes, protected={"t_excl"}) == {}
    # a unique index that is a prefix of another still enforces its constraint; the wider one is not covered
    assert drops([ix("t_a_uq", "a", unique=True), ix("t_a_b", "a, b")]) == {}


def test_look_alikes_that_do_not_cover():
    assert drops([
        ix("t_a_part", "a", where="(b > 0)"), ix("t_a_b", "a, b"),  # partial: another predicate
        ix("t_g", "a", method="gist"), ix("t_g2", "a, b", method="gist"),  # a prefix counts for B-trees only
        ix("t_h", "a", method="hash"),  # another method
        ix("t_b_desc", "b DESC"), ix("t_b_c", "b, c"),  # another ordering
        ix("u_a", "a", table="u"),  # another table
        ix("t_d_inc", "d", include=("e",)), ix("t_d_f", "d, f"),  # its INCLUDE column is not in the other
        ix("t_expr", "lower(s), d"), ix("t_expr2", "lower(s)"),  # expressions compare as written
    ]) == {"t_expr2": "covered by t_expr (its columns are a prefix of it)"}
    assert drops([ix("t_k_inc", "k", include=("m",)), ix("t_k_m", "k, m"),
                  ix("t_k_more", "k", include=("m", "n"))]) == \
        {"t_k_inc": "covered by t_k_m (its columns are a prefix of it)"}  # the widest cover


def test_shape_reads_the_structured_fields_not_the_definition_text():
    s = shape(ix("i", "lower(s), b DESC", include=("c", "d"), where="((a > 0) AND (b < 3))"))
    assert (s.method, s.keys, s.include, s.where) == \
        ("btree", ("lower(s)", "b DESC"), ("c", "d"), "((a > 0) AND (b < 3))")
    assert shape(IndexInfo("public", "t", "i", "CREATE INDEX i ON public.t USING btree (a)", 0, 0, False, False,
                           columns=())) is None  # no key elements given: nothing to compare
