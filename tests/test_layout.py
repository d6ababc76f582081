"""The shared pieces: layouts (position and scale), generated doc tables, KEY=VALUE options."""

from __future__ import annotations

import numpy as np
import pytest

from tablegym import doctables
from tablegym.layout import Field, Layout
from tablegym.options import check_choice, check_int, parse_key_value, parse_options

LAYOUT = Layout(
    [
        Field("count", 3, 4, "cards per seat", seats=True),
        Field("onehot", 2, doc="a flag"),
        Field(
            "score",
            3,
            lambda rounds, **_: 10 * rounds,
            "total per seat",
            low=lambda rounds, **_: -5 * rounds,
            seats=True,
            range_doc="−5R…10R",
        ),
    ]
)


def test_positions_and_sizes():
    assert LAYOUT.size == 8
    assert LAYOUT.at == {"count": 0, "onehot": 3, "score": 5}
    assert LAYOUT.slices["score"] == slice(5, 8)


def test_pack_scales_raw_values_and_decode_inverts_them():
    at = LAYOUT.at
    idx = [at["count"], at["count"] + 1, at["onehot"] + 1, at["score"], at["score"] + 1]
    vec = LAYOUT.pack(idx, [4, 2, 1, -5, 4], rounds=1, num_players=2)
    assert vec.dtype == np.float32
    np.testing.assert_allclose(vec, [1, 0.5, 0, 0, 1, 0, 0.6, 0], rtol=1e-6)
    raw = LAYOUT.decode(vec, raw=True, rounds=1, num_players=2)
    assert raw["count"].tolist() == [4, 2, 0]
    assert raw["score"].tolist()[:2] == [-5, 4]
    assert LAYOUT.decode(vec)["onehot"].tolist() == [0, 1]


def test_seats_not_in_play_stay_zero_even_with_a_low_bound():
    scale, shift = LAYOUT.affine(rounds=2, num_players=2)
    assert shift[LAYOUT.slices["score"]].tolist() == [pytest.approx(1 / 3)] * 2 + [0]


def test_decode_takes_batches_and_rejects_wrong_lengths():
    batch = np.zeros((5, LAYOUT.size), np.float32)
    assert LAYOUT.decode(batch)["score"].shape == (5, 3)
    with pytest.raises(ValueError, match="length 8"):
        LAYOUT.decode(np.zeros(7))


def test_bad_layouts_are_refused():
    with pytest.raises(ValueError, match="declared twice"):
        Layout([Field("a", 1), Field("a", 1)])
    with pytest.raises(ValueError, match="high must exceed low"):
        Layout([Field("a", 1, 0)]).affine()
    with pytest.raises(ValueError, match="needs range_doc"):
        Layout([Field("a", 1, lambda **_: 3)]).table()


def test_table_lists_every_field_with_its_range():
    rows = LAYOUT.table().splitlines()
    assert rows[2] == "| 0–2 | `count` | 3 | 0–4 | cards per seat |"
    assert rows[4] == "| 5–7 | `score` | 3 | −5R…10R | total per seat |"


def test_doc_tables_are_regenerated_between_markers():
    text = "x\n  <!-- layout: tests.test_layout.LAYOUT -->\n  old\n  <!-- end layout -->\ny"
    new = doctables.render(text)
    assert "  | 5–7 | `score`" in new and "old" not in new
    assert doctables.render(new) == new


EXTENDED = Layout([*LAYOUT.fields, Field("extra", 2, 3, "more")])


def test_a_table_after_its_prefix_lists_only_the_added_fields():
    text = (
        "<!-- layout: tests.test_layout.LAYOUT -->\n<!-- end layout -->\n"
        "<!-- layout: tests.test_layout.EXTENDED -->\n<!-- end layout -->"
    )
    first, second = doctables.render(text).split("<!-- end layout -->")[:2]
    assert "`score`" in first
    assert "| 0–7 | (the table above) | 8 |" in second and "`score`" not in second
    assert "| 8–9 | `extra` | 2 | 0–3 | more |" in second
    # Alone, or after a layout it does not start with, every field is listed.
    assert "`score`" in EXTENDED.table() and "`score`" in LAYOUT.table(after=EXTENDED)


def test_every_doc_table_in_the_repository_is_current():
    assert doctables.stale() == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a=1", 1), ("a=-2.5", -2.5), ("a=true", True), ("a=True", True), ("a=False", False),
     ("a=none", None), ("a=own_decks", "own_decks")],
)  # fmt: skip
def test_one_key_value_parser(text, expected):
    assert parse_key_value(text) == ("a", expected)


@pytest.mark.parametrize("text", ["a", "=1", "a=", "a= "])
def test_key_value_parser_refuses_malformed_items(text):
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        parse_key_value(text)


def test_parse_options_later_key_wins():
    assert parse_options(["a=1", "b=x", "a=2"]) == {"a": 2, "b": "x"}


def test_numpy_integers_are_integers_but_bools_are_not():
    assert check_choice("n", np.int64(3), (3, 4)) == 3
    assert type(check_int("n", np.int32(3), 1)) is int
    with pytest.raises(ValueError, match="got True"):
        check_int("n", True, 0)


def test_old_option_names_are_refused_with_the_new_name():
    from tablegym.options import check_options

    with pytest.raises(ValueError, match="option 'rounds' is now called 'num_rounds'"):
        check_options({"rounds": 3}, ("num_players", "num_rounds", "reward"))
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        check_options({"colour": 3}, ("num_players",))
