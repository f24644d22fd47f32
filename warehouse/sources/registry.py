"""The sources tomforge reads, each declared once with the words other places show about it: the
citation the dataset card prints (`hub/card.py`) and the note a `--source` help list adds after its name.
The adapter itself is `warehouse/sources/<name>.py`, imported only when the source is read, so listing
the sources (the CLI's help, the config's checks) imports no adapter and no data library.

To add a source: its adapter module and one `Source(...)` entry below (ARCHITECTURE.md, "A new source").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Source:
    """One source: its name (the adapter module's), the BibTeX to cite (None: nothing published to
    cite), the note help lists add after the name, and the note the list of story sources adds."""

    name: str
    citation: str | None = None
    note: str = ""
    story_note: str = ""


class SourceRegistry:
    """The declared sources in declaration order (the order help lists and errors name them in)."""

    def __init__(self, sources: Iterable[Source]) -> None:
        self.entries: list[Source] = list(sources)

    def add(self, source: Source) -> Source:
        """Declare one more source (last in every list); returns it."""
        self.entries.append(source)
        return source

    def names(self) -> tuple[str, ...]:
        """Every source name, in declaration order."""
        return tuple(source.name for source in self.entries)

    def citations(self) -> dict[str, str]:
        """name -> BibTeX, for the sources that have one."""
        return {source.name: source.citation for source in self.entries if source.citation}

    def help_list(self, names: Iterable[str] | None = None, story: bool = False) -> str:
        """`a, b or c (note)`: the named sources (default: all) with their notes (`story`: the story notes)."""
        notes = {source.name: source.story_note if story else source.note for source in self.entries}
        shown = [f"{name} ({notes[name]})" if notes.get(name) else name for name in (names or self.names())]
        return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


SOURCES = SourceRegistry(
    [
        Source(
            "hitom",
            citation="""@inproceedings{wu2023hitom,
  title = {Hi-ToM: A Benchmark for Evaluating Higher-Order Theory of Mind Reasoning in Large Language Models},
  author = {Wu, Yufan and others},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2023},
  year = {2023}
}""",
        ),
        Source(
            "exploretom",
            citation="""@inproceedings{sclar2025exploretom,
  title = {Explore Theory of Mind: Program-guided Adversarial Data Generation for Theory of Mind Reasoning},
  author = {Sclar, Melanie and others},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year = {2025}
}""",
            story_note="higher orders and move operators only: no tells",
        ),
        Source(
            "fantom",
            citation="""@inproceedings{kim2023fantom,
  title = {FANToM: A Benchmark for Stress-testing Machine Theory of Mind in Interactions},
  author = {Kim, Hyunwoo and others},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing},
  year = {2023}
}""",
        ),
        Source(
            "opentom",
            citation="""@inproceedings{xu2024opentom,
  title = {OpenToM: A Comprehensive Benchmark for Evaluating Theory-of-Mind Reasoning Capabilities of Large Language Models},
  author = {Xu, Hainiu and others},
  booktitle = {Proceedings of the 62nd Annual Meeting of the Association for Computational Linguistics},
  year = {2024}
}""",
        ),
        Source(
            "tomi",
            citation="""@inproceedings{le2019tomi,
  title = {Revisiting the Evaluation of Theory of Mind through Question Answering},
  author = {Le, Matthew and Boureau, Y-Lan and Nickel, Maximilian},
  booktitle = {Proceedings of EMNLP-IJCNLP 2019},
  year = {2019}
}""",
        ),
        Source(
            "bigtom",
            citation="""@inproceedings{gandhi2023bigtom,
  title = {Understanding Social Reasoning in Language Models with Language Models},
  author = {Gandhi, Kanishk and others},
  booktitle = {Advances in Neural Information Processing Systems, Datasets and Benchmarks Track},
  year = {2023}
}""",
        ),
        Source(
            "rlfiles",
            note="RL training files: docs/rl-files.md",
        ),
    ]
)
