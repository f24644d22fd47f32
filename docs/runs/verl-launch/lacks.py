"""Print the wheels of a `pip install --report` resolution that the GPU machine's image lacks, as NAME==VERSION.

The image's packages are device/KINDS.md's list (image-packages.txt); transformers and tokenizers are carried even
though the image has them (5.17 and 0.23.2 there; verl 0.9.1 needs transformers <5.11, and 5.10.4 needs tokenizers
<=0.23.0). Usage: python3 lacks.py report.json image-packages.txt
"""

from __future__ import annotations

import json
import re
import sys

CARRY_ANYWAY = {"transformers", "tokenizers"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main(report: str, image_file: str) -> None:
    with open(image_file) as f:
        image = {norm(n.strip()) for n in f.read().split(",") if n.strip()}
    with open(report) as f:
        installs = json.load(f)["install"]
    for item in installs:
        name = norm(item["metadata"]["name"])
        if name not in image or name in CARRY_ANYWAY:
            print(f"{name}=={item['metadata']['version']}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
