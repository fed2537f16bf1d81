#!/usr/bin/env python3
"""Generates a deterministic source-like tree for the search benchmarks.

Usage: gen_tree.py DIR [FILES]   (default 50,000 files)

About 40 lines per file in nested directories, a .gitignore'd build directory, and the
word `needle_token` on roughly one line in 2,000, so searches return a realistic number of
matches.
"""
import os
import random
import sys

WORDS = ("fn let match impl struct enum return self value result error config path "
         "file write read async await spawn tokio serde json parse token buffer").split()


def main() -> None:
    root = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 50_000
    rng = random.Random(42)
    exts = [".rs", ".py", ".ts", ".md", ".toml", ".txt"]
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("target/\n*.log\n")
    for i in range(count):
        depth = rng.randint(1, 4)
        parts = [f"d{rng.randint(0, 30)}" for _ in range(depth)]
        if i % 50 == 0:
            parts = ["target"] + parts
        d = os.path.join(root, *parts)
        os.makedirs(d, exist_ok=True)
        ext = ".log" if i % 97 == 0 else rng.choice(exts)
        lines = []
        for _ in range(40):
            words = [rng.choice(WORDS) for _ in range(rng.randint(4, 12))]
            if rng.random() < 0.0005:
                words.insert(rng.randint(0, len(words)), "needle_token")
            lines.append(" ".join(words))
        with open(os.path.join(d, f"file{i}{ext}"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
