"""Public identifiers: prefix, length, alphabet, and every character equally likely."""
from collections import Counter

from config.ids import _ALPHABET, new_id


def test_an_id_is_its_prefix_and_twenty_characters_of_the_alphabet():
    ids = {new_id("otp") for _ in range(1000)}
    assert len(ids) == 1000  # 36^20 possibilities: a repeat would mean the randomness is broken
    for value in ids:
        prefix, suffix = value.split("_")
        assert prefix == "otp" and len(suffix) == 20 and set(suffix) <= set(_ALPHABET)
    assert len(new_id("dep", length=40).split("_")[1]) == 40


def test_every_character_is_equally_likely():
    counts = Counter("".join(new_id("x")[2:] for _ in range(10_000)))
    expected = 10_000 * 20 / len(_ALPHABET)  # about 5,556 each, standard deviation about 73 (1.3 %)
    assert set(counts) == set(_ALPHABET)
    # every byte mapped by modulo would give the first four characters 1/7 (14 %) more; 7 % is over 5 deviations
    assert all(abs(n - expected) < 0.07 * expected for n in counts.values()), counts
