#!/usr/bin/env python3
"""Writes tests/testdata/sharegpt_sessions_200.json, the multi-turn test file.

200 ShareGPT conversations of 2 to 6 human turns each, every human turn
followed by a "gpt" answer; the texts are windows of words of the built-in
corpus (common/corpus/public_domain.txt): a human turn 20-80 words, an answer
20-60 words. Deterministic (a fixed seed, the standard library only): the
committed file is this script's output, byte for byte.

  scripts/make_sharegpt_sessions.py           # (re)write the file
  scripts/make_sharegpt_sessions.py --check   # exit 1 if the file differs
"""

import argparse
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "common" / "corpus" / "public_domain.txt"
OUTPUT = ROOT / "tests" / "testdata" / "sharegpt_sessions_200.json"

SEED = 20261204
CONVERSATIONS = 200
HUMAN_TURNS = (2, 6)
HUMAN_WORDS = (20, 80)
ANSWER_WORDS = (20, 60)


def window(rng, words, count_range):
    """A run of corpus words of a drawn length, from a drawn start, wrapping."""
    count = rng.randint(*count_range)
    start = rng.randrange(len(words))
    return " ".join(words[(start + i) % len(words)] for i in range(count))


def conversations(words):
    rng = random.Random(SEED)
    out = []
    for i in range(CONVERSATIONS):
        turns = []
        for _ in range(rng.randint(*HUMAN_TURNS)):
            turns.append({"from": "human", "value": window(rng, words, HUMAN_WORDS)})
            turns.append({"from": "gpt", "value": window(rng, words, ANSWER_WORDS)})
        out.append({"id": f"session-{i:03d}", "conversations": turns})
    return out


def render(convs):
    """One conversation per line, so that a change shows as a small diff."""
    lines = [json.dumps(c, ensure_ascii=True, separators=(", ", ": ")) for c in convs]
    return "[\n" + ",\n".join(lines) + "\n]\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    args = parser.parse_args()
    words = CORPUS.read_text(encoding="utf-8").split()
    convs = conversations(words)
    counts = {sum(t["from"] == "human" for t in c["conversations"]) for c in convs}
    assert counts == set(range(HUMAN_TURNS[0], HUMAN_TURNS[1] + 1)), counts
    text = render(convs)
    if args.check:
        same = OUTPUT.exists() and OUTPUT.read_text(encoding="utf-8") == text
        if not same:
            print(f"{OUTPUT} is not the output of {pathlib.Path(__file__).name}; rerun it",
                  file=sys.stderr)
        return 0 if same else 1
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
