"""Mutation check: does the test suite catch small deliberate bugs?

Each entry of `MUTATIONS` names a file, an exact snippet of it, the snippet that replaces it (the
bug) and the tests that should notice. Every mutation is applied alone to a temporary copy of the
repository (never to the working tree), only its tests run there with the same interpreter, and a
mutation counts as caught when pytest reports failed tests. A snippet that no longer occurs exactly
once is reported as stale (the code moved on: update the entry). Exit status 0 only when every
mutation is caught and the unmutated copy passes the same tests.

    .venv/bin/python -m bench.mutations                 # all mutations
    .venv/bin/python -m bench.mutations --list          # names and the tests each one runs
    .venv/bin/python -m bench.mutations --only ids.item_id_parts_swapped --only reward.no_then_yes
    .venv/bin/python -m bench.mutations --cold          # a fresh pytest process per run (the way before issue 38)

To add one: append a `Mutation` below with the smallest snippet that is unique in its file.

Speed: `bench/mutation_catchers.json` records, per mutation, the test that failed on it last time
(`--record` rewrites it). That test runs first, alone; if it fails the mutation is caught (it is one of the
mutation's own tests, so the verdict is the same as the whole set's), otherwise the whole set runs. A
missing, renamed or no-longer-failing catcher only costs the time of the first run. Each pytest run is a
child forked from a server per copy that imported the heavy third-party packages once (`bench/warm_pytest.py`;
the project's modules are imported fresh in every child), unless `--cold`.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.numba_cache import numba_cache_kept
from bench.warm_pytest import WarmPytest

REPO = Path(__file__).resolve().parents[1]
CATCHERS = REPO / "bench" / "mutation_catchers.json"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    original: str
    mutated: str
    tests: tuple[str, ...]  # test files or node ids, relative to the repository root
    why: str = ""  # the user-visible bug it stands for


ACCOUNTING_TESTS = (
    "tests/warehouse/test_warehouse.py",
    "tests/warehouse/test_batch.py",
    "tests/flows/test_cli.py",
    "tests/warehouse/test_reconciliation.py",
)
LEDGER_TESTS = ("tests/hub/test_release_ledger.py",)
REAL_TESTS = ("tests/generators/test_real_balance.py", "tests/generators/test_real_variants.py")
DIALOGUE_TESTS = ("tests/generators/test_generator_dialogue.py",)

MUTATIONS: tuple[Mutation, ...] = (
    # issue 18 item 1: reconciliation must be able to fail (tests by helper "accounting")
    Mutation(
        "accounting.view_always_reconciled",
        "warehouse/sql/views.sql",
        " AS reconciled",
        " OR true AS reconciled",
        ACCOUNTING_TESTS,
        "the reconciliation view says yes whatever the counts",
    ),
    Mutation(
        "accounting.report_always_reconciled",
        "warehouse/load.py",
        "return self.read == self.loaded + self.rejected",
        "return True",
        ACCOUNTING_TESTS,
        "LoadReport.reconciled is true whatever the counts: exit 3 never happens",
    ),
    Mutation(
        "accounting.read_not_counted_apart",
        "warehouse/parallel.py",
        "read = adapter.count_input(Path(root))",
        "read = staged.read",
        ACCOUNTING_TESTS,
        "read is what the parser yielded again: a record lost in parsing goes unnoticed",
    ),
    Mutation(
        "accounting.swap_ignores_the_view",
        "warehouse/db.py",
        '"SELECT count(*) FROM reconciliation WHERE NOT reconciled"',
        '"SELECT 0"',
        ACCOUNTING_TESTS,
        "a warehouse whose items disagree with its ledger is swapped in",
    ),
    # issue 13: the release ledger (tests by helper "ledger")
    Mutation(
        "ledger.sum_never_checked",
        "hub/ledger.py",
        'if row["warehouse"] != row["released"] + row["removed"]:',
        "if False:",
        LEDGER_TESTS,
        "a release that lost items says it reconciles",
    ),
    Mutation(
        "ledger.verify_ignores_unlisted_files",
        "hub/verify.py",
        '        found.append(f"{relative}: not in the manifest (stale or foreign file)")\n',
        "",
        LEDGER_TESTS,
        "a stray file in a release passes verify",
    ),
    Mutation(
        "ledger.derived_rows_not_checked",
        "hub/ledger.py",
        '    return [f"{table}: {n} rows are not warehouse items with unchanged content"] if n else []',
        "    return []",
        LEDGER_TESTS,
        "a derived release may carry rows whose content differs from the warehouse's",
    ),
    Mutation(
        "cli.errors_import_the_warehouse",
        "flows/cli.py",
        "    try:\n        yield\n    except Exception as caught:\n",
        "    import tomforge.warehouse.load  # noqa: F401\n    try:\n        yield\n    except Exception as caught:\n",
        ("tests/flows/test_cli.py",),
        "eval's error handler imports jsonschema/orjson: eval fails on the GPU machine",
    ),
    # issue 14: variants of real stories balanced by default (tests by helper "variants2")
    Mutation(
        "variants.balance_off_by_default",
        "generators/real/variant_settings.py",
        '        True,\n        "--balance/--no-balance",',
        '        False,\n        "--balance/--no-balance",',
        REAL_TESTS,
        "variants keep the source's shortcuts: the first-container rule far above chance",
    ),
    Mutation(
        "variants.mentions_not_padded",
        "generators/real/balance.py",
        '        if "likes" not in style.SENTENCES.get(story.source, {}) or not questions or len(containers) < 2:\n',
        "        if True:\n",
        REAL_TESTS,
        "no mention-balancing sentences: first/last/most-mentioned rules stay above chance",
    ),
    Mutation(
        "variants.tomi_tells_not_parsed",
        "generators/real/tomi.py",
        '    (re.compile(rf"({NAME}) told ({NAME}) that the {_T} is in the {_T}\\."), tell(public=False)),\n',
        "",
        REAL_TESTS,
        "ToMi's private tells are not read back: the checker's gold ignores them",
    ),
    # item 2: overlap audit
    Mutation(
        "overlap.half_the_lsh_bands",
        "audits/lsh.py",
        '    """(n_docs x bands) uint64 keys, one hash per band of `rows` signature slots."""\n',
        '    """(n_docs x bands) uint64 keys, one hash per band of `rows` signature slots."""\n'
        "    banding = Banding((banding.bands + 1) // 2, banding.rows)\n",
        (
            "tests/audits/test_audit_near_threshold.py",
            "tests/audits/test_audit_overlap.py",
            "tests/audits/test_audit_minhash.py",
        ),
        "only 11 of the 21 bands are searched: P(detect | J=0.8) falls from 0.998 to 0.965",
    ),
    Mutation(
        "minhash.kernel_finalizer_shift",
        "audits/minhash.py",
        "            h ^= h >> np.uint32(13)\n",
        "            h ^= h >> np.uint32(12)\n",
        ("tests/audits/test_audit_minhash.py",),
        "the compiled signature loop mixes hashes differently from datasketch: signatures stop matching it",
    ),
    Mutation(
        "overlap.no_exact_jaccard_check",
        "audits/overlap.py",
        "if jac >= p.jaccard_threshold or max(c_a, c_b) >= p.containment_threshold:",
        "if True:",
        ("tests/audits/test_audit_near_threshold.py", "tests/audits/test_audit_overlap.py"),
        "every LSH candidate is reported as a near duplicate",
    ),
    # issue 17: compiled skeletons (tests by helper "scale2")
    Mutation(
        "skeleton.kernel_names_never_at_sentence_start",
        "audits/skeleton.py",
        "if flags[w] & SKEL_NAME and (not sentence_start or seen_stamp[low_id[w]] != d):",
        "if flags[w] & SKEL_NAME and not sentence_start:",
        ("tests/audits/test_audit_skeleton.py",),
        "the compiled skeleton misses names that only open sentences: structural twins keyed differently from the reference",
    ),
    Mutation(
        "skeleton.kernel_two_word_things",
        "audits/skeleton.py",
        "    while j < hi and j - i < 3:\n",
        "    while j < hi and j - i < 2:\n",
        ("tests/audits/test_audit_skeleton.py",),
        "thing phrases cut at two words in the compiled skeleton: 'the big old chest' keyed unlike the reference",
    ),
    Mutation(
        "ngram.kernel_same_cluster_counts_in_null",
        "audits/ngram.py",
        "if train[doc] and cmin != cmax:",
        "if train[doc] and n_train > 1:",
        ("tests/audits/test_audit_ngram.py",),
        "the 13-gram null counts grams shared within one cluster (a context's own near copies): threshold inflated, leaks missed",
    ),
    Mutation(
        "ngram.numpy_same_cluster_counts_in_null",
        "audits/ngram.py",
        "weights=tr & (cmin != cmax)[run]",
        "weights=tr & (n_train > 1)[run]",
        ("tests/audits/test_audit_ngram.py",),
        "the same bug on the numpy path (no numba)",
    ),
    Mutation(
        "ngram.best_match_ignores_doc_frequency",
        "audits/ngram.py",
        'pl.len().over("gram") <= max_doc_freq',
        'pl.len().over("gram") >= 0',
        ("tests/audits/test_audit_ngram.py",),
        "best train match counts boilerplate grams shared by many train contexts",
    ),
    Mutation(
        "baselines.eval_sample_never_taken",
        "audits/baselines.py",
        '    if df.height <= limit:\n        return df, ""',
        '    if True:\n        return df, ""',
        ("tests/audits/test_audit_baselines_sample.py",),
        "baseline_max_eval ignored: every held-out item scored",
    ),
    Mutation(
        "baselines.eval_sample_one_story_short",
        "audits/baselines.py",
        'limit, side="left")) + 1',
        'limit, side="left"))',
        ("tests/audits/test_audit_baselines_sample.py",),
        "the held-out sample stops one story short of its size",
    ),
    Mutation(
        "features.kernel_window_hits_skip_last_window",
        "audits/features.py",
        "        for j in range(lo, hi - m + 1):\n            total = np.uint64(0)\n            for i in range(m):\n",
        "        for j in range(lo, hi - m):\n            total = np.uint64(0)\n            for i in range(m):\n",
        ("tests/audits/test_audit_features.py",),
        "a candidate named in a story's last words is never counted as mentioned",
    ),
    Mutation(
        "text.norm_words_kernel_keeps_hyphens",
        "audits/text.py",
        "if c in _WORD_ASCII else 0 for c in range(256)]",
        "if c in _WORD_ASCII or c == 45 else 0 for c in range(256)]",
        ("tests/audits/test_audit_features.py",),
        "the compiled normalizer keeps '-' inside words: 'A-B' is one token, not two",
    ),
    Mutation(
        "features.kernel_window_filter_wrong_bits",
        "audits/features.py",
        "            top = h >> np.uint64(44)\n            if (seen",
        "            top = h >> np.uint64(45)\n            if (seen",
        ("tests/audits/test_audit_features.py",),
        "the mention search's bit filter rejects real mentions",
    ),
    Mutation(
        "artifacts.kernel_distinct_words_counts_repeats",
        "audits/text.py",
        "                if last_text[v] != d:\n",
        "                if True:\n",
        ("tests/audits/test_audit_features.py",),
        "a word repeated in one text counts as several texts in the feature counts",
    ),
    Mutation(
        "artifacts.structural_columns_unsorted",
        "audits/artifacts.py",
        "cols[:, k] = rank[starts[k] + d.search_sorted(v).to_numpy()]",
        "cols[:, k] = starts[k] + d.search_sorted(v).to_numpy()",
        ("tests/audits/test_audit_features.py",),
        "structural feature counts land under another feature's name",
    ),
    Mutation(
        "artifacts.heuristic_chance_unweighted",
        "audits/artifacts.py",
        '((pl.col("chance") * pl.col("n")).sum()',
        '((pl.col("chance")).sum()',
        ("tests/audits/test_audit_artifacts.py",),
        "a heuristic's chance level is the mean over distinct chance values, not over items",
    ),
    Mutation(
        "run.artifacts_not_held_back",
        "audits/run.py",
        "side.submit(_after(largest_done, _timed), _artifact_tables",
        "side.submit(_timed, _artifact_tables",
        (
            "tests/audits/test_audit_scale.py::test_artifacts_are_submitted_held_back_behind_the_overlaps_largest_phases",
        ),
        "the artifacts run beside the overlap's largest phases: a million items pass 6 GB",
    ),
    Mutation(
        "run.artifacts_queued_behind_baselines",
        "audits/run.py",
        'ThreadPoolExecutor(2, thread_name_prefix="audit-side")',
        'ThreadPoolExecutor(1, thread_name_prefix="audit-side")',
        ("tests/audits/test_audit_threads.py::test_the_artifacts_do_not_wait_for_the_baselines",),
        "the template artifacts wait for the baselines' thread: at a million items the side work outlasts the overlap",
    ),
    Mutation(
        "overlap.skeletons_before_the_sentences",
        "audits/overlap.py",
        "skeletons = beside.submit(skeleton_keys, ev.texts)\n",
        "skeletons = beside.submit(skeleton_keys, ev.texts)\n        skeletons.result()\n",
        (
            "tests/audits/test_audit_threads.py::test_skeletons_run_beside_the_sentences_phase_and_give_the_reference_keys",
        ),
        "the skeletons are waited for before the sentences phase: the main path carries them again",
    ),
    Mutation(
        "ranks.counted_items_multiplied",
        "audits/ranks.py",
        "            _add_repeated(observed, v, count)\n",
        "            observed += v * count\n",
        ("tests/audits/test_audit_ranks_compiled.py",),
        "the gold-rank counts add count * spread, not each item's spread in turn: shares and p-values drift",
    ),
    Mutation(
        "ranks.kernel_question_mark_ends_no_sentence",
        "audits/ranks.py",
        "return data[p - 1] == 46 or data[p - 1] == 33 or data[p - 1] == 63",
        "return data[p - 1] == 46 or data[p - 1] == 33",
        ("tests/audits/test_audit_ranks_compiled.py",),
        "the compiled story reader does not end a sentence after '?': sentence ranks differ from the reference",
    ),
    Mutation(
        "ranks.kernel_phrase_runs_into_the_next_story",
        "audits/ranks.py",
        "                    if i > t1 - m:\n",
        "                    if i > t1 - 1:\n",
        ("tests/audits/test_audit_ranks_compiled.py",),
        "the first-word lookup lets a phrase start on a story's last words and end in the next story's",
    ),
    Mutation(
        "ranks.kernel_lookup_finds_no_word",
        "audits/ranks.py",
        'hi = np.searchsorted(sorted_hashes, ct_hash[p0], side="right")',
        'hi = np.searchsorted(sorted_hashes, ct_hash[p0], side="left")',
        ("tests/audits/test_audit_ranks_compiled.py",),
        "the range of words with the candidate's first word is empty: no candidate is ever mentioned",
    ),
    Mutation(
        "plan_search.draws_retry_once",
        "generators/plan_search.py",
        "        while word >= n:\n",
        "        if word >= n:\n",
        ("tests/generators/test_generator_plan_search.py",),
        "a slot draw after the bulk words retries a rejected word once: out-of-range draws, every later story differs",
    ),
    Mutation(
        "hashing.kernel_keeps_one_letter_words",
        "audits/hashing.py",
        "        if i - start >= 2:\n",
        "        if i - start >= 1:\n",
        ("tests/audits/test_hashing_vectorizer.py",),
        "the compiled vectorizer keeps one-letter words: baselines differ from sklearn's HashingVectorizer",
    ),
    # item 3: reward
    Mutation(
        "reward.no_then_yes",
        "rl/reward.py",
        "if says_no and not any(w in _YES for w in words[1:]):",
        "if says_no:",
        ("tests/rl/test_rl_reward.py",),
        '"no ... yes" earns the reward of "no"',
    ),
    Mutation(
        "reward.yes_then_no",
        "rl/reward.py",
        "if says_yes and not any(w in _NO for w in words[1:]):",
        "if says_yes:",
        ("tests/rl/test_rl_reward.py",),
        '"yes, or maybe no" earns the reward of "yes"',
    ),
    Mutation(
        "reward.substring_match",
        "rl/reward.py",
        "    return bool(_variants(normalize(response)) & _variants(normalize(gold)))",
        "    return normalize(gold) in normalize(response)",
        ("tests/rl/test_rl_reward.py",),
        '"the green basket or the red drawer" counts as "green basket"',
    ),
    Mutation(
        "reward.letter_with_other_text",
        "rl/reward.py",
        "    if rest and not texts_match(rest, options[index]):\n        return None\n",
        "",
        ("tests/rl/test_rl_reward.py",),
        '"B or C" / "B) blue box" pick B',
    ),
    Mutation(
        "reward.last_of_several_answers",
        "rl/reward.py",
        "correct = all(is_correct(answer, truth) for answer in answers) if answers else False",
        "correct = is_correct(answers[-1], truth) if answers else False",
        ("tests/rl/test_rl_reward.py",),
        "with score_malformed_answers, <answer>no</answer><answer>yes</answer> is scored on its last answer only",
    ),
    # item 4: ids
    Mutation(
        "ids.item_id_parts_swapped",
        "schemas/record.py",
        "return hex_digest(source, source_key)",
        "return hex_digest(source_key, source)",
        ("tests/schemas/test_ids.py",),
        "item ids change meaning (and collide across sources named like keys)",
    ),
    Mutation(
        "ids.context_not_normalized",
        "schemas/record.py",
        "return hex_digest(normalize_context(context))",
        "return hex_digest(context)",
        ("tests/schemas/test_ids.py",),
        "the same story with other whitespace gets another context_id",
    ),
    Mutation(
        "ids.content_hash_includes_item_id",
        "schemas/record.py",
        '    "item_id",\n    "context_id",\n    "content_hash",  # ids',
        '    "context_id",\n    "content_hash",  # ids',
        ("tests/schemas/test_ids.py",),
        "a renamed key changes the content hash",
    ),
    Mutation(
        "ids.content_hash_includes_split",
        "schemas/record.py",
        '    "source_ref",\n    "split",  # where',
        '    "source_ref",  # where',
        ("tests/schemas/test_ids.py",),
        "moving a question to another split changes its content hash (README: content only)",
    ),
    Mutation(
        "ids.batch_hash_over_every_field",
        "warehouse/batch.py",
        "_HASHED = tuple(sorted(CONTENT_FIELDS))",
        '_HASHED = tuple(sorted(n for n in FIELDS if n not in ("item_id", "content_hash")))',
        ("tests/schemas/test_ids.py",),
        "the column path (big inputs) hashes other fields than the row path",
    ),
    Mutation(
        "ids.content_hash_other_serialization",
        "schemas/record.py",
        "return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()",
        "return hashlib.sha256(orjson.dumps(payload)).hexdigest()",
        ("tests/schemas/test_ids.py",),
        "the content hash depends on key order, not only on content",
    ),
    # item 5: HiToM tree meta
    Mutation(
        "hitom.tree_length_and_sample_swapped",
        "warehouse/sources/hitom_tree.py",
        "story_length=int(length),\n                sample=int(sample),",
        "story_length=int(sample),\n                sample=int(length),",
        ("tests/warehouse/test_source_hitom.py",),
        "story_length and sample of the text tree are swapped",
    ),
    # item 6: weak tests
    Mutation(
        "tomi.false_belief_inverted",
        "warehouse/sources/tomi.py",
        'false_belief = f"{match.group(1)}_order", match.group(3) == "tom"',
        'false_belief = f"{match.group(1)}_order", match.group(3) == "no_tom"',
        ("tests/warehouse/test_source_tomi.py",),
        "ToMi's false-belief flag reads the trace the wrong way round",
    ),
    Mutation(
        "parallel.one_pass_drops_last_batch",
        "warehouse/parallel.py",
        "stage(info, adapter.read_columns(root), input_ref, progress)",
        "stage(info, list(adapter.read_columns(root))[:-1], input_ref, progress)",
        ("tests/warehouse/test_ingest_parallel.py::test_small_or_unsplittable_inputs_stay_in_one_process",),
        "the unsplit staging path loses its last batch of records",
    ),
    Mutation(
        "trl.format_reward_sign",
        "rl/reward.py",
        "            score_completion(completion_text(c), t, weights).format_reward\n",
        "            -score_completion(completion_text(c), t, weights).format_reward\n",
        ("tests/rl/test_rl_trl.py::test_two_trl_steps_write_a_checkpoint",),
        "TRL's format reward rewards malformed completions",
    ),
    Mutation(
        "eval.reward_of_another_item",
        "rl/evaluate.py",
        "            truth, info, rendering, place = truths[item], infos[item], renderings[item], places[item]",
        "            truth, info, rendering, place = truths[(item + 1) % len(truths)], infos[item], renderings[item], "
        "places[item]",
        ("tests/rl/test_rl_eval.py",),
        "each completion is scored against the next item's ground truth",
    ),
    # stale audits (helper "trust"): content the audit never saw must not be cleaned or published under it
    Mutation(
        "stale.audit_hash_not_compared",
        "audits/freshness.py",
        "bool_or(i.content_hash IS DISTINCT FROM {audited_hash}) AS new_content",
        "bool_or(false) AS new_content",
        ("tests/test_stale_audit.py",),
        "an answer edited after the audit is cleaned and published unaudited",
    ),
    Mutation(
        "stale.clean_run_not_compared",
        "audits/freshness.py",
        "self.clean_run_id is not None and self.clean_run_id != self.run_id",
        "False",
        ("tests/test_stale_audit.py",),
        "cleaning from an earlier audit is published under the latest one",
    ),
    Mutation(
        "stale.run_id_ignores_content",
        "audits/run.py",
        '        *items["item_id"].sort().to_list(),\n        *items["content_hash"].sort().to_list(),\n',
        '        *items["item_id"].sort().to_list(),\n',
        ("tests/test_stale_audit.py",),
        "a re-audit of new content keeps the run id: old cleaning passes for new",
    ),
    # issue 24 item 1: RL training files as a source (helper "rlsource")
    Mutation(
        "rlfiles.question_runs_past_blank_line",
        "warehouse/sources/rl_prompt.py",
        "    if blank:\n        ends.append(blank.start())",
        "    if False:\n        ends.append(blank.start())",
        ("tests/warehouse/test_source_rlfiles.py", "tests/warehouse/test_rlfiles_roundtrip.py"),
        "the instructions after a question (options, answer format) are read as part of the question",
    ),
    Mutation(
        "rlfiles.json_ground_truth_not_decoded",
        "warehouse/sources/rl_prompt.py",
        'if isinstance(value, str) and value.strip()[:1] in ("{", "["):',
        "if False:",
        ("tests/warehouse/test_source_rlfiles.py", "tests/warehouse/test_rlfiles_roundtrip.py"),
        "a ground truth given as a JSON string (a list, tomforge's own object) is kept as raw JSON text",
    ),
    Mutation(
        "rlfiles.marker_inside_a_word",
        "warehouse/sources/rl_prompt.py",
        "    return index == 0 or text[index - 1].isspace()",
        "    return True",
        ("tests/warehouse/test_source_rlfiles.py",),
        'a marker glued to a word ("BackStory:") opens the story',
    ),
    Mutation(
        "rlfiles.meta_drops_null_columns",
        "warehouse/sources/rlfiles.py",
        "meta = dict(row)\n",
        "meta = {k: v for k, v in row.items() if v is not None}\n",
        ("tests/warehouse/test_source_rlfiles.py",),
        "columns that are null in a row vanish from meta: not lossless",
    ),
    Mutation(
        "rlfiles.unsplit_count_of_another_kind",
        "warehouse/sources/rlfiles.py",
        'f"{self.name}: {counts.get(SPLIT_NONE, 0)} of',
        'f"{self.name}: {counts.get(SPLIT_QUESTION_ONLY, 0)} of',
        ("tests/warehouse/test_source_rlfiles.py",),
        "the load prints a wrong count of prompts kept whole",
    ),
    Mutation(
        "exploretom.short_row_read_by_polars",
        "warehouse/sources/exploretom.py",
        "    if frame.get_column(frame.columns[-1]).null_count():",
        "    if False:",
        ("tests/warehouse/test_source_exploretom.py",),
        "an ExploreToM row with too few fields loads with nulls for its cells",
    ),
    Mutation(
        "overlap.contained_called_near_duplicate",
        "audits/overlap.py",
        'add("near_duplicate" if jac >= p.jaccard_threshold else "contained", int(a), int(b))',
        'add("near_duplicate", int(a), int(b))',
        ("tests/audits/test_audit_near_threshold.py", "tests/audits/test_audit_report.py"),
        "containment-only pairs are listed as near duplicates while the report calls them contained",
    ),
    Mutation(
        "clean.reordered_rows_keep_the_old_hash",
        "audits/clean.py",
        "        left = _rehash(warehouse, left)\n",
        "",
        ("tests/hub/test_release_ledger.py",),
        "a released row whose options cleaning re-ordered carries another content's hash",
    ),
    Mutation(
        "generator.unobserved_move_never_applies",
        "generators/operators.py",
        "if replay.present_before[p] and everyone - replay.present_before[p]\n    ]\n    if not slots:",
        "if replay.present_before[p] and everyone - replay.present_before[p]\n    ]\n    if True:",
        ("tests/generators/test_generator_properties.py",),
        "an operator that never applies: the property tests skip every story using it",
    ),
    # helper "audfix": place names of numbered stories, duplicates vs variants
    Mutation(
        "features.places_on_the_normalized_story",
        "audits/features.py",
        'pl.col("context")\n        .str.to_lowercase()\n        .str.extract_all(_PLACE.pattern)',
        'pl.col("story")\n        .str.extract_all(_PLACE.pattern)',
        ("tests/audits/test_audit_features.py",),
        "ToMi's numbered lines give candidates like 'green_bucket 4': most items unscorable, the last one always right",
    ),
    Mutation(
        "clean.variant_kept_over_its_original",
        "audits/clean.py",
        'pl.col("item_id").sort_by("_variant", "item_id").first()',
        'pl.col("item_id").min()',
        ("tests/audits/test_audit_clean.py::test_an_original_is_never_removed_for_its_own_variant",),
        "cleaning removes an original as a duplicate of its own variant (smallest item id kept)",
    ),
    # issue 16: the one progress path (tests by helper "arch2")
    Mutation(
        "progress.last_chunk_not_reported",
        "warehouse/load.py",
        "    if progress is not None and count > reported:",
        "    if False:",
        ("tests/schemas/test_progress.py",),
        "a bar stops short of the records staged (the last partial chunk is never shown)",
    ),
    Mutation(
        "progress.lines_not_rate_limited",
        "schemas/progress.py",
        "if now - since >= self.interval:",
        "if True:",
        ("tests/schemas/test_progress.py",),
        "a flow's log gets a line per 5000 records instead of one per interval",
    ),
    Mutation(
        "progress.upload_without_total",
        "hub/publish.py",
        '    with progress.stage("upload", total=len(plan.add)) as uploading:',
        '    with progress.stage("upload", total=None) as uploading:',
        ("tests/hub/test_publish_hub.py::test_upload_reports_the_files_it_commits",),
        "the upload shows no total: a spinner where a bar of the files could be",
    ),
    # issue 29: one error hierarchy, one handler (tests by helper "cleanup")
    Mutation(
        "errors.handler_ignores_class_code",
        "flows/cli.py",
        "exit_with_error(str(exc), exc.exit_code)",
        "exit_with_error(str(exc))",
        ("tests/test_errors.py", "tests/test_stale_audit.py"),
        "every user error exits 2: a stale audit, a Hub conflict or an unreconciled load look like bad input",
    ),
    Mutation(
        "errors.internal_errors_lose_traceback",
        "flows/cli.py",
        "        if exc is None or exc.keeps_traceback():\n            raise",
        "        if exc is None:\n            raise",
        ("tests/test_errors.py",),
        "a bug inside the generator or the column validator is printed as a user's bad input, without a traceback",
    ),
    Mutation(
        "layers.upward_import",
        "audits/shortcuts.py",
        "from tomforge.generators.shortcuts import HEURISTICS\n",
        "from tomforge.generators.shortcuts import HEURISTICS\nfrom tomforge.hub import remote  # noqa: F401\n",
        ("tests/test_layers.py",),
        "the analysis layer imports the release layer: the layers stop meaning anything",
    ),
    Mutation(
        "cli_defaults.train_batch_size_drifts",
        "rl/verl_backend.py",
        'train_batch_size: int = flag(64, "--batch-size", min=1, help="verl: prompts per step.")',
        "train_batch_size: int = 64",
        ("tests/test_cli_defaults.py",),
        "train --batch-size no longer reaches verl's train_batch_size, and --help shows TRL's default alone",
    ),
    Mutation(
        "cli_defaults.eval_field_loses_its_flag",
        "rl/eval_settings.py",
        'max_new_tokens: int = flag(256, "--max-new-tokens", min=1)',
        "max_new_tokens: int = 256",
        ("tests/test_cli_defaults.py",),
        "`tomforge eval --max-new-tokens` is gone: the setting no longer declares its flag",
    ),
    Mutation(
        "cli_defaults.eval_ignores_its_flags",
        "flows/commands/rl.py",
        "    settings = flags.build(EvalSettings)",
        "    settings = EvalSettings()",
        ("tests/rl/test_rl_gate.py::test_tomforge_eval_prints_chance_and_the_gate",),
        "`tomforge eval --gate 0.8` still gates at 0.90: eval's settings flags are parsed and dropped",
    ),
    Mutation(
        "cli_defaults.on_off_flag_shown_backwards",
        "flows/commands/flags.py",
        "return param.opts[0] if value else param.secondary_opts[0]",
        "return param.secondary_opts[0] if value else param.opts[0]",
        ("tests/test_cli_defaults.py",),
        "train --help says --bf16 is the default where TRL runs without it",
    ),
    Mutation(
        "cli_defaults.help_shows_the_field_reference",
        "flows/commands/flags.py",
        "        resolve_shown_defaults(self)\n",
        "",
        ("tests/test_cli_defaults.py",),
        "--help shows `[default: (tomforge.audits.config:AuditParams.num_perm)]` instead of the value",
    ),
    # issue 27: rationales, the process reward and trace fidelity (tests by helper "rationale")
    Mutation(
        "rationale.first_counting_event_decides",
        "generators/rationale.py",
        "last = deciding[-1] if deciding else None",
        "last = deciding[0] if deciding else None",
        ("tests/generators/test_rationale.py",),
        "the rationale concludes from the first event that counts, not the last",
    ),
    Mutation(
        "rationale.variants_under_generated_rules",
        "generators/rationale.py",
        "GENERATED_RULES if generated else SOURCE_RULES.get(base, GENERATED_RULES)",
        "GENERATED_RULES",
        ("tests/generators/test_rationale.py",),
        "a real story's variant is explained under tomforge's rules, not its source's",
    ),
    Mutation(
        "rationale.distrust_reversed",
        "generators/rationale.py",
        'return f"{chain[-1]} does not trust {event.speaker}"',
        'return f"{event.speaker} does not trust {chain[-1]}"',
        ("tests/generators/test_rationale.py",),
        "the rationale says the speaker distrusts the listener",
    ),
    Mutation(
        "process.beliefs_always_at_the_end",
        "rl/process_reward.py",
        "return [e.step for e in cursor] or [self.final]",
        "return [self.final]",
        ("tests/rl/test_process_reward.py",),
        "a belief claimed after an event is checked against the end of the story",
    ),
    Mutation(
        "claims.according_to_ignored",
        "rl/claims.py",
        'chain = (p.agents[m.group("acc")], *chain)',
        "chain = chain",
        ("tests/rl/test_process_reward.py",),
        "'According to Bob, Ann thinks ...' is checked as Ann's own belief",
    ),
    Mutation(
        "process.any_event_will_do",
        "rl/process_reward.py",
        "return step is not None and any(c.verdict == CORRECT and step in c.events for c in checked)",
        "return any(c.verdict == CORRECT for c in checked)",
        ("tests/rl/test_process_reward.py",),
        "a reasoning that names some true event counts as naming the deciding one",
    ),
    Mutation(
        "process.contradictions_free",
        "rl/process_reward.py",
        "(self.n_correct - contradiction_penalty * self.n_contradicted)",
        "(self.n_correct - 0.0)",
        ("tests/rl/test_process_reward.py",),
        "contradicted claims cost nothing: invented moves pay",
    ),
    Mutation(
        "fidelity.lucky_answers_count_as_faithful",
        "rl/fidelity.py",
        'right = sum(bool(r["correct"]) and bool(r["faithful"]) for r in judged)',
        'right = sum(bool(r["correct"]) for r in judged)',
        ("tests/rl/test_rl_eval.py::test_eval_reports_trace_fidelity",),
        "right for the wrong reasons is reported as right for the right reasons",
    ),
    # issue 25 items 3-10: the defects a new user found (tests by helper "defects")
    Mutation(
        "defects.selection_checked_inside_parentheses",
        "warehouse/selection.py",
        "    bare = _parse(_PREFIX + text)",
        '    bare = _parse(f"{_PREFIX}({text})")',
        ("tests/warehouse/test_selection.py",),
        '--train "1=1) OR (1=1" passes the check and selects everything',
    ),
    Mutation(
        "defects.memory_variants_without_order",
        "generators/real/variants.py",
        'belief_order=0 if c.kind == "memory" else order',
        'belief_order=None if c.kind == "memory" else order',
        ("tests/generators/test_real_variants.py::test_memory_variants_are_order_zero",),
        "memory variants get a NULL belief_order: `belief_order <= k` drops them",
    ),
    Mutation(
        "defects.repeats_not_in_the_verdict",
        "audits/checks/overlap.py",
        "    n_repeats = sum(repeats.values())",
        "    n_repeats = 0",
        ("tests/audits/test_audit_repeats.py",),
        "within-side duplicates: pass, then clean removes repeated questions",
    ),
    Mutation(
        "defects.oracle_counts_only_the_selection",
        "audits/checks/variants.py",
        'n_warehouse += ev.get("n_rejected_in_warehouse", len(ev["item_ids"]))',
        'n_warehouse += len(ev["item_ids"])',
        ("tests/generators/test_real_variants.py::test_oracle_verdict_counts_the_selections_and_says_so",),
        "the oracle line gives the selections' count as the warehouse's",
    ),
    Mutation(
        "defects.no_split_vocabulary",
        "hub/export.py",
        "    name = SPLIT_VOCABULARY.get(name.lower(), name)",
        "    name = name",
        ("tests/hub/test_split_vocabulary.py",),
        "load_dataset(release, 'all') has val beside validation",
    ),
    Mutation(
        "defects.publish_license_guard_off",
        "hub/release.py",
        "    if found and not options.allow_restricted_training:",
        "    if False:",
        ("tests/schemas/rl/test_license_guard.py",),
        "an evaluation-only source is published in the train split silently",
    ),
    Mutation(
        "defects.train_license_guard_off",
        "rl/release.py",
        "    if found and not allow:",
        "    if False:",
        ("tests/schemas/rl/test_license_guard.py",),
        "train runs on a split whose source forbids training",
    ),
    Mutation(
        "defects.input_file_not_sniffed",
        "warehouse/parallel.py",
        "    found = sniff(Path(root)) if Path(root).is_file() else None",
        "    found = None",
        ("tests/warehouse/test_sniff.py",),
        "a .gz given as HiToM says 'not a HiToM file', not 'gzip: gzip -dc'",
    ),
    Mutation(
        "defects.unreachable_only_at_the_top",
        "schemas/hub_errors.py",
        "    return next((e for e in _chain(exc) if _names(e) & _UNREACHABLE), None)",
        "    return next((e for e in [exc] if _names(e) & _UNREACHABLE), None)",
        ("tests/test_hub_unreachable.py",),
        "offline ingest/train/eval: exit 2 with a class name, publish exit 5",
    ),
    Mutation(
        "defects.ctrl_c_silent",
        "flows/cli_polish.py",
        "        if exc.code == ExitCode.INTERRUPTED:",
        "        if False:",
        ("tests/flows/test_cli_polish.py",),
        "Ctrl-C exits 130 without saying the warehouse is unchanged",
    ),
    # issue 25: one writer at a time, tags that never move, and three planted bugs no test caught (helper "lock")
    Mutation(
        "lock.building_unlocked",
        "warehouse/db.py",
        "    with hold(path):\n",
        "    if True:\n",
        ("tests/warehouse/test_concurrency.py::test_two_ingests_at_once_keep_both_sources",),
        "two ingests at once: the last swap wins and a whole source is gone, reconciled: yes",
    ),
    Mutation(
        "lock.folder_tag_moves",
        "hub/folder.py",
        "    if held is None:\n        return False\n",
        "    if True:\n        return False\n",
        ("tests/warehouse/test_concurrency.py::test_a_folder_tag_never_moves",),
        "publish --tag v1 twice with other content: exit 0 and v1 now means other data",
    ),
    Mutation(
        "lock.leftovers_kept",
        "warehouse/db.py",
        "        _remove_leftovers(path)\n",
        "        pass\n",
        ("tests/test_concurrency_soak.py::test_ingest_killed_at_each_checkpoint_leaves_before_or_after",),
        "every writer killed mid-build leaves a full copy of the warehouse beside it, forever",
    ),
    Mutation(
        "faults.eval_written_in_place",
        "rl/evaluate.py",
        "    with db.building(Path(warehouse)) as con:\n",
        '    with __import__("duckdb").connect(str(warehouse)) as con:\n',
        ("tests/test_concurrency_soak.py::test_eval_killed_in_its_write_leaves_before_or_after",),
        "eval killed while storing leaves eval_results with its earlier rows deleted and the new ones missing",
    ),
    Mutation(
        "faults.bad_lock_timeout_is_locked",
        "warehouse/lock.py",
        "    exit_code = ExitCode.BAD_INPUT\n",
        "    exit_code = ExitCode.LOCKED\n",
        ("tests/warehouse/test_lock_timeout.py",),
        "TOMFORGE_LOCK_TIMEOUT=ten exits 9 as if another writer held the lock",
    ),
    Mutation(
        "faults.config_lock_timeout_ignored",
        "warehouse/lock.py",
        "        return DEFAULT_TIMEOUT_S if configured is None else configured\n",
        "        return DEFAULT_TIMEOUT_S\n",
        ("tests/warehouse/test_lock_timeout.py",),
        "[warehouse] lock_timeout in the config changes nothing: writers wait 600 s",
    ),
    Mutation(
        "freshness.removed_not_counted",
        "audits/freshness.py",
        "return self.removed + self.content_changed + self.selection_changed",
        "return self.content_changed + self.selection_changed",
        ("tests/test_planted_defects.py::test_an_audited_item_removed_by_a_reingest_makes_the_audit_stale",),
        "an audited item removed by a re-ingest: clean says counts do not reconcile, publish --table items_full "
        "releases marks of a selection that no longer exists",
    ),
    Mutation(
        "ledger.keys_from_warehouse_only",
        "hub/ledger.py",
        "keys = sorted(set(warehouse) | set(back.released) | set(back.removed))",
        "keys = sorted(set(warehouse))",
        ("tests/test_planted_defects.py",),
        "rows released or removed under a (source, split) the warehouse lacks drop out of the ledger and verify",
    ),
    Mutation(
        "manifest.ledger_not_content",
        "hub/manifest.py",
        'CONTENT_PREFIXES = ("data/", "audit/", "ledger/")',
        'CONTENT_PREFIXES = ("data/", "audit/")',
        ("tests/test_planted_defects.py::test_content_id_covers_data_audit_and_ledger_but_not_the_card",),
        "a different removal ledger keeps the content id and the default tag",
    ),
    # issue 28: the gold's rank under every ranking, rank controls, repeated sentences (helper "controls")
    Mutation(
        "ranks.ties_go_to_the_gold",
        "audits/ranks.py",
        "    out[start : start + pattern[group]] = 1.0 / pattern[group]",
        "    out[start] = 1.0",
        ("tests/audits/test_audit_ranks.py",),
        "a gold tied with others counts as ranked first: a clean set with ties is flagged",
    ),
    Mutation(
        "ranks.null_covariance_without_ties",
        "audits/ranks.py",
        "cov[start : start + t, start : start + t] += 1.0 / (k * t)",
        "cov[start : start + t, start : start + t] += 1.0 / k",
        ("tests/audits/test_audit_ranks.py",),
        "the chi-square's null ignores the ties: its p-values are wrong on tied rankings",
    ),
    Mutation(
        "rank_controls.no_tail",
        "generators/plan_search.py",
        "    for t in range(n_tails):\n",
        "    for t in range(1):\n",  # the first tail listed is the empty one (plan_search.tail_table: length 0 first)
        ("tests/generators/test_generator_rank_controls.py",),
        "no statements at the end: last mention and last move give the reality answer",
    ),
    Mutation(
        "plan_search.stale_last_move_cost",
        "generators/plan_search.py",
        "_cost(3, moved, stratum, gold, starts, squares, work[1]) if says_stores else unmoved_cost",
        "unmoved_cost",
        ("tests/generators/test_generator_plan_search.py",),
        "a tail that says 'stores' is scored by the story's own last moves: other tails win, every later story differs",
    ),
    Mutation(
        "plan_search.squares_without_ties",
        "generators/plan_search.py",
        "            total += squares[q, a, t, pos]\n",
        "            total += squares[q, a, 1, pos]\n",
        ("tests/generators/test_generator_padding_parts.py",),
        "the table of squares read as if no container tied with the gold: tied ranks cost what untied ones do",
    ),
    Mutation(
        "rank_controls.padding_may_repeat",
        "generators/rank_control.py",
        "agent = rng.choice([a for a in story.agents if (a, kind, container) not in said])",
        "agent = rng.choice(story.agents)",
        ("tests/generators/test_generator_rank_controls.py",),
        "padding repeats a statement the story already holds, sentence for sentence",
    ),
    Mutation(
        "repeats.world_excuses_every_repeat",
        "audits/repeats.py",
        '"flagged": repeats > world_repeats if traced else back',
        '"flagged": back',
        ("tests/audits/test_audit_ranks.py",),
        "a traced story repeating padding apart from itself passes the audit",
    ),
    Mutation(
        "renderings.you_is",
        "generators/renderings.py",
        '    (r"\\b([Yy]ou) is\\b", r"\\1 are"),\n',
        "",
        ("tests/generators/test_generator_renderings.py",),
        "second-person stories say 'You is fond of the box'",
    ),
    # issue 26: the fast generation path (helper "gpu"): identical to transformers' generate, or caught
    Mutation(
        "fastgen.position_not_advanced",
        "rl/fastgen.py",
        "            cache.positions.add_(1)",
        "            cache.positions.add_(0)",
        ("tests/rl/test_rl_fastgen.py::test_every_step_scores_equal_a_plain_forward_of_the_sequence",),
        "every new token gets its predecessor's rotary position: greedy outputs drift from generate's",
    ),
    Mutation(
        "fused_projections.copies_not_views",
        "rl/fused_projections.py",
        "        param.data = stacked[start : start + rows]",
        "        param.data = stacked[start : start + rows].clone()",
        ("tests/rl/test_rl_fused_projections.py::test_new_weights_copied_into_a_parameter_reach_the_fused_generator",),
        "the fused tensor is a copy: weights synced into the generator's parameters never reach its products",
    ),
    Mutation(
        "fastgen.gate_and_up_swapped",
        "rl/fastgen.py",
        "    gate, up = F.linear(x, gate_up).chunk(2, dim=-1)",
        "    up, gate = F.linear(x, gate_up).chunk(2, dim=-1)",
        ("tests/rl/test_rl_fastgen.py::test_every_step_scores_equal_a_plain_forward_of_the_sequence",),
        "the fused MLP product's halves read the wrong way round: the activation goes on the up projection",
    ),
    Mutation(
        "sft.compiled_layers_fixed_shapes",
        "rl/compiled_layers.py",
        "        layer.compile(backend=backend, dynamic=True)",
        "        layer.compile(backend=backend, dynamic=False)",
        (
            "tests/rl/test_rl_sft_loss.py::"
            "test_compiled_layers_give_the_plain_models_loss_and_gradients_with_one_compilation",
        ),
        "SFT's compiled layers for fixed shapes: every new batch length compiles again (run 12: 70-110 s a step)",
    ),
    Mutation(
        "fast_trl.compile_rollouts_ignored",
        "rl/fast_trl.py",
        "model, dtype=dtype, compile_decode=compile_rollouts, compile_prefill=compile_rollouts",
        "model, dtype=dtype, compile_decode=False, compile_prefill=False",
        ("tests/rl/test_rl_fastgen.py::test_trl_rollouts_through_the_fast_path_equal_trls_own",),
        "compile_rollouts never reaches the rollout generator: the RL step runs eager while its settings say compiled",
    ),
    Mutation(
        "fastgen.prefill_duck_sizing",
        "rl/fastgen.py",
        "            with shape_config.patch(use_duck_shape=False):",
        "            with shape_config.patch(use_duck_shape=True):",
        ("tests/rl/test_rl_fastgen.py::test_compiled_prompt_pass_is_not_compiled_again_for_other_chunks_and_caches",),
        "the prompt pass's halves keep sizes that happened to match (16 rows and head dimension 16; 64 rows and 64"
        " q/k/v columns) as equal: the next chunk compiles again",
    ),
    Mutation(
        "trl_backend.compile_layers_ignored",
        "rl/trl_backend.py",
        "    if layers_compiled(s.compile_layers, trainer.model):",
        "    if False:",
        ("tests/rl/test_rl_fastgen.py::test_trl_rollouts_through_the_fast_path_equal_trls_own",),
        "TrlSettings.compile_layers never compiles the policy: the RL step's training pass runs eager",
    ),
    Mutation(
        "sft.compiled_by_default_on_the_cpu",
        "rl/compiled_layers.py",
        "    return compiler_available(model) if setting is None else setting",
        "    return True if setting is None else setting",
        ("tests/rl/test_rl_sft_loss.py::test_layers_are_compiled_by_default_only_where_the_compiler_pays",),
        "SFT compiles its layers by default on the CPU too: seconds of C++ compilation that save nothing there",
    ),
    Mutation(
        "cli.compile_flag_misses_the_layers",
        "flows/commands/rl.py",
        '        overrides["compile_rollouts"] = overrides["compile_layers"]',  # --compile: declared on compile_layers
        '        overrides["compile_rollouts"] = overrides.pop("compile_layers")',
        ("tests/test_cli_defaults.py::test_compile_flag_sets_both_the_rollouts_and_the_layers",),
        "`tomforge train --no-compile` still compiles the policy's layers on a GPU",
    ),
    Mutation(
        "fastgen.temperature_dropped",
        "rl/fastgen.py",
        "        if self.temperature is not None and self.temperature != 1.0:",
        "        if False:",
        (
            "tests/rl/test_rl_fastgen.py::test_sampling_draws_what_generate_draws_under_the_same_seed",
            "tests/rl/test_rl_fastgen.py::test_sampling_distribution_matches_softmax_of_a_plain_forward",
        ),
        "rollouts sample at temperature 1 whatever the trainer asks",
    ),
    Mutation(
        "fastgen.sampling_is_greedy",
        "rl/fastgen.py",
        "            if sampling.do_sample:",
        "            if sampling.temperature not in (None, 1.0):",
        ("tests/rl/test_rl_fastgen.py::test_trl_rollouts_through_the_fast_path_equal_trls_own",),
        "RL rollouts at temperature 1 are greedy: all samples of a prompt alike, no RLOO signal",
    ),
    Mutation(
        "fastgen.stop_sequence_cut_short",
        "rl/fastgen.py",
        "                    end = i + 1",
        "                    end = i",
        ("tests/rl/test_rl_fastgen.py::test_stop_sequence_cuts_where_a_plain_search_of_generate_finds_it",),
        "each completion loses its stop token (TRL never sees the end of the turn)",
    ),
    # issue 26: the prompt pass over each chunk's own length, the decode step's key window (helper "speed")
    Mutation(
        "fastgen.decode_window_misses_its_slot",
        "rl/fastgen.py",
        "-(-(slot + 1) // self.length_bucket)",
        "-(-slot // self.length_bucket)",
        (
            "tests/rl/test_rl_fastgen.py::test_prefill_over_each_chunks_own_length_equals_generate",
            "tests/rl/test_rl_fastgen.py::test_every_step_scores_equal_a_plain_forward_of_the_sequence",
        ),
        "a step whose slot opens a new bucket does not attend to its own key: greedy outputs drift from generate's",
    ),
    Mutation(
        "fastgen.prefill_token_budget_ignored",
        "rl/fastgen.py",
        " or (row - start + 1) * wider > self.prefill_tokens)",
        ")",
        ("tests/rl/test_rl_fastgen.py::test_prefill_chunks_cut_by_rows_and_by_tokens_at_the_chunks_longest_prompt",),
        "prompt-pass chunks sized by rows alone: long prompts build attention masks far past the token budget",
    ),
    # issue 24: tomforge scan (tests by helper "scan")
    Mutation(
        "scan.ngram_without_coverage_floor",
        "audits/scan_match.py",
        '\n            & (pl.col("coverage") >= p.ngram_min_coverage)\n        )',
        "\n        )",
        ("tests/audits/test_scan.py",),
        "a templated document sharing a few 13-grams with a story is called contaminated",
    ),
    Mutation(
        "scan.null_counts_own_grams",
        "audits/scan_null.py",
        "mixed = np.minimum.reduceat(cluster, starts) != np.maximum.reduceat(cluster, starts)",
        "mixed = np.ones(len(starts), dtype=bool)",
        ("tests/audits/test_scan.py",),
        "the null coverage counts a story's own n-grams: nothing is ever beyond it",
    ),
    Mutation(
        "scan.span_one_word_long",
        "audits/scan_match.py",
        "return int(starts[best]), int(ends[best]) - 1 + n",
        "return int(starts[best]), int(ends[best]) + n",
        ("tests/audits/test_scan.py",),
        "the span of an embedded story runs one word past its end",
    ),
    Mutation(
        "scan.purify_keeps_everything",
        "audits/scan_purify.py",
        "        keep[removed] = False\n",
        "",
        ("tests/audits/test_scan.py",),
        "the purified copy still holds the contaminated documents",
    ),
    Mutation(
        "scan.names_not_abstracted",
        "audits/scan_index.py",
        'out.append(roles.setdefault(word, f"AGENT{len(roles) + 1}"))',
        "out.append(word.lower())",
        ("tests/audits/test_scan.py",),
        "a held-out story told with other names is not found",
    ),
    # issue 36 items 3-5: selections, RL file splits and content parts, the scan on bad input (tests by helper "inputs")
    Mutation(
        "inputs.selection_read_unchecked",
        "audits/store.py",
        "    check_selection(where, flag)\n    problem = bound_problem(con, where, flag)\n",
        "    problem = bound_problem(con, where, flag)\n",
        ("tests/warehouse/test_selection.py",),
        "`scan --benchmark \"split = 'test') OR (1=1\"` selects train rows as held-out and exits 0",
    ),
    Mutation(
        "inputs.selection_comment_allowed",
        "warehouse/selection.py",
        "    comment = _comment_at(text)\n",
        "    comment = None\n",
        ("tests/warehouse/test_selection.py",),
        "a selection holding a /* */ comment is pasted into the query",
    ),
    Mutation(
        "inputs.rl_split_words_inside_words",
        "warehouse/sources/rl_rows.py",
        "    for part in name_parts(name):\n        if part in SPLIT_WORDS and part not in found:",
        "    for part in sorted(SPLIT_WORDS):\n        if part in name.lower() and part not in found:",
        ("tests/warehouse/test_source_rlfiles.py",),
        "`latest.jsonl` or `contest_data.parquet` is filed under test, `device-logs.jsonl` under dev",
    ),
    Mutation(
        "inputs.rl_split_whole_name_only",
        "warehouse/sources/rl_rows.py",
        "    return [part.lower() for part in _NAME_SPLIT.split(name) if part]",
        "    return [name.lower()]",
        ("tests/warehouse/test_source_rlfiles.py",),
        "`ToM_test_HiExTi_hint.parquet` is filed under train",
    ),
    Mutation(
        "inputs.rl_non_text_parts_silent",
        "warehouse/sources/rl_prompt.py",
        "            ignored.append(str(kind))\n",
        "            pass\n",
        ("tests/warehouse/test_source_rlfiles.py",),
        "an image part of a chat prompt is dropped without a word",
    ),
    Mutation(
        "inputs.scan_bad_record_stops",
        "audits/scan_corpus.py",
        "        if self.strict:\n",
        "        if True:\n",
        ("tests/audits/test_scan_input.py",),
        "one broken jsonl line stops the scan of a whole corpus",
    ),
    Mutation(
        "inputs.scan_rejected_not_counted",
        "audits/scan.py",
        "            read += len(batch) + batch.n_rejected\n",
        "            read += len(batch)\n",
        ("tests/audits/test_scan_input.py",),
        "documents read leaves out the rejected ones: read != scanned + rejected",
    ),
    Mutation(
        "inputs.scan_strict_not_passed",
        "flows/commands/scan.py",
        "            strict=strict,\n",
        "",
        ("tests/audits/test_scan_input.py",),
        "`scan --strict` goes on past a bad record",
    ),
    Mutation(
        "inputs.scan_null_keeps_near_copies",
        "audits/scan_index.py",
        "    null = null_coverage(grams, gram_offsets, clusters)\n",
        "    null = null_coverage(grams, gram_offsets, np.arange(len(gram_offsets) - 1))\n",
        ("tests/audits/test_scan_input.py",),
        "a variant of a held-out story covers it in the null: the null saturates and the n-gram kind never fires",
    ),
    Mutation(
        "inputs.near_copy_filter_too_tight",
        "audits/scan_null.py",
        "    need = longer - prefix + 1\n",
        "    need = longer - prefix + 2\n",
        ("tests/audits/test_scan_input.py",),
        "the prefix filter asks one shared shingle too many: some near copies stay in the null",
    ),
    Mutation(
        "inputs.scan_saturation_silent",
        "audits/scan_null.py",
        "    if above >= 1.0 - 1e-12:\n",
        "    if False:\n",
        ("tests/audits/test_scan_input.py",),
        "a saturated n-gram null is reported as able to fire",
    ),
    # issue 28: the RL eval's format-transfer block (tests by helper "transfer")
    Mutation(
        "transfer.pairs_by_item_id",
        "rl/evaluate.py",
        'pair_key(info["source"], place or info["item_id"], truth)',
        'pair_key(info["source"], info["item_id"], truth)',
        ("tests/rl/test_rl_transfer.py::test_train_on_one_rendering_evaluate_on_both",),
        "the renderings of one world get different partner keys: the block pairs nothing",
    ),
    Mutation(
        "transfer.rendering_not_selected",
        "rl/release.py",
        "    if ref.rendering is not None:\n        table = _select_rendering(table, ref, root)\n",
        "",
        (
            "tests/rl/test_rl_transfer.py::test_split_refs_name_a_rendering",
            "tests/rl/test_rl_transfer.py::test_tomforge_train_records_the_rendering",
        ),
        "`--train tomforge_gen/train:second_person` trains on every rendering",
    ),
    Mutation(
        "transfer.limit_takes_other_worlds",
        "rl/release.py",
        'return kept.sort_by([(name, "ascending") for name in keys]) if keys else kept',
        "return kept",
        ("tests/rl/test_rl_transfer.py::test_split_refs_name_a_rendering",),
        "`--limit N` evaluates different worlds in each rendering: the pairs fall apart",
    ),
    Mutation(
        "transfer.selector_not_in_distribution",
        "rl/evaluate.py",
        '{ref.config, f"{ref.config}/{ref.split}", str(ref)} & id_names',
        '{ref.config, f"{ref.config}/{ref.split}"} & id_names',
        ("tests/rl/test_rl_transfer.py::test_train_on_one_rendering_evaluate_on_both",),
        "`--in-distribution CONFIG/SPLIT:RENDERING` is ignored: the trained rendering shows as held-out",
    ),
    Mutation(
        "transfer.renderings_share_a_column",
        "rl/evaluate.py",
        'in several else ""',
        'in set() else ""',
        ("tests/rl/test_rl_transfer.py::test_planted_transfer_gap",),
        "the matrix averages the renderings of a split into one column",
    ),
    Mutation(
        "transfer.difference_sign",
        "rl/paired.py",
        "round((c - b) / n, 4)",
        "round((b - c) / n, 4)",
        ("tests/rl/test_rl_transfer.py::test_paired_difference_against_hand_worked_values_and_other_implementations",),
        "a rendering that loses accuracy is reported as gaining it",
    ),
    Mutation(
        "transfer.interval_of_the_other_sign",
        "rl/paired.py",
        "means = (counts[:, 1] - counts[:, 0]) / n",
        "means = (counts[:, 0] - counts[:, 1]) / n",
        ("tests/rl/test_rl_transfer.py::test_paired_difference_against_hand_worked_values_and_other_implementations",),
        "the 95% interval brackets the opposite difference",
    ),
    Mutation(
        "transfer.mcnemar_tail_short",
        "rl/paired.py",
        "for k in range(min(b, c) + 1)",
        "for k in range(min(b, c))",
        ("tests/rl/test_rl_transfer.py::test_paired_difference_against_hand_worked_values_and_other_implementations",),
        "McNemar's p leaves out the observed count: renderings look different when they are not",
    ),
    Mutation(
        "transfer.trained_rendering_not_read",
        "rl/evaluate.py",
        "    trained_on = trained_on or trained_on_of(model_path)\n",
        "",
        ("tests/rl/test_rl_transfer.py::test_planted_transfer_gap",),
        "eval ignores what the checkpoint was trained on: no paired differences",
    ),
    # issue 28: the dialogue rendering and the list / answerability forms (helper "dialogue")
    Mutation(
        "dialogue.access_misses_the_last_placement",
        "generators/question_forms.py",
        "return effect.index >= last_placement",
        "return effect.index > last_placement",
        DIALOGUE_TESTS,
        "whoever saw the object placed, with no move after, is said not to know where it is",
    ),
    Mutation(
        "dialogue.lucky_beliefs_asked",
        "generators/question_forms.py",
        "return knows(engine, agent) != has_access(engine, agent)",
        "return False",
        DIALOGUE_TESTS,
        "'who knows' and 'can Bob know' contradict each other on a lucky belief",
    ),
    Mutation(
        "dialogue.oracle_trusts_every_tell",
        "schemas/world/checker.py",
        "return decisive.container == truth and speaker is not None",
        "return speaker is not None",
        DIALOGUE_TESTS,
        "the oracle takes a lie's listener to have a way of knowing",
    ),
    Mutation(
        "dialogue.move_told_by_a_bystander",
        "generators/dialogue.py",
        "self.say(index, event.the_agent(), MOVE",
        "self.say(index, self.someone_here(), MOVE",
        DIALOGUE_TESTS,
        "a move is narrated by someone who did not make it",
    ),
    Mutation(
        "dialogue.quote_names_a_container",
        "generators/dialogue.py",
        "and not names.search(turns[j][1])",
        "",
        DIALOGUE_TESTS,
        "a mid-conversation question quotes a turn naming a container: a cue to the answer",
    ),
    Mutation(
        "dialogue.cut_before_the_answer_settles",
        "generators/dialogue.py",
        "places = [j for j in quiet if (dialogue.events[j] or 0) >= settled]",
        "places = list(quiet)",
        DIALOGUE_TESTS,
        "a question asked mid-conversation carries the end's gold",
    ),
    Mutation(
        "dialogue.cut_places_unbalanced",
        "generators/record_writer.py",
        "if q.key not in forms.KNOWLEDGE_FORMS:  # a surface pick",
        "if False:  # a surface pick",
        DIALOGUE_TESTS,
        "asked right after the deciding move: 'the last container said so far' answers",
    ),
    Mutation(
        "dialogue.mid_answers_unbalanced",
        "generators/dialogue_answers.py",
        "return all(after[key, label] <= bound for key in keys)",
        "return True",
        ("tests/generators/test_dialogue_shortcuts.py",),
        "a yes/no question asked mid-conversation is more often 'no': where it is asked gives the answer",
    ),
    Mutation(
        "dialogue.hearing_rule_in_the_conversation",
        "generators/dialogue.py",
        "return Dialogue(tuple(teller.turns), tuple(teller.events), tuple(teller.phrasings))",
        "return Dialogue(((NARRATOR, HEARING_RULE), *teller.turns), (None, *teller.events), "
        "(('rule', ()), *teller.phrasings))",
        ("tests/generators/test_dialogue_shortcuts.py",),
        "every conversation opens with the same 25-word line: held-out ones share long runs with train",
    ),
    Mutation(
        "dialogue.one_greeting_opener",
        "generators/dialogue.py",
        'else f"{OPENERS[kind][phrasing[0]]} {body}"',
        'else f"{OPENERS[kind][0]} {body}"',
        ("tests/generators/test_dialogue_shortcuts.py",),
        "comings and goings in a few fixed phrasings: conversations in one room share runs of greetings",
    ),
    Mutation(
        "dialogue.oracle_ignores_the_cut",
        "schemas/world/checker.py",
        "return trace if cut is None else trace[: int(cut) + 1]",
        "return trace",
        DIALOGUE_TESTS,
        "mid-conversation golds are checked against the end of the story",
    ),
    # helper "operators": one Operator declaration per operator, its traits read by the generator and the variants
    Mutation(
        "operators.tells_never_applied",
        "generators/operators.py",
        "    tells = [name for name in chosen if OPERATORS[name].is_tell]",
        "    tells: list[str] = []",
        ("tests/generators/test_operator_registry.py",),
        "tell operators chosen for a story are silently left out",
    ),
    Mutation(
        "operators.rate_scale_ignored",
        "generators/generate.py",
        "rate = self.settings.operator_rate * operator.rate_scale",
        "rate = self.settings.operator_rate",
        ("tests/generators/test_operator_registry.py",),
        "every operator drawn at the base rate: returns as often as lies",
    ),
    Mutation(
        "operators.none_kept",
        "generators/operator_registry.py",
        'chosen = [name for name in names if name != "none"]',
        "chosen = names",
        ("tests/generators/test_operator_registry.py", "tests/test_cli_defaults.py"),
        "'--operators lie,none' refused as an unknown operator 'none'",
    ),
    Mutation(
        "operators.sentence_needs_ignored",
        "generators/operator_registry.py",
        "(self.needs_sentence is None or self.needs_sentence in sentences)",
        "True",
        ("tests/generators/test_operator_registry.py",),
        "variants ask a source for sentences it has no template for",
    ),
    Mutation(
        "hitom.json_only_folder_reads_nothing",
        "warehouse/sources/hitom.py",
        "            yield from json_batches(json_file, root, parser)\n            return",
        "            return",
        ("tests/warehouse/test_source_hitom.py",),
        "a folder holding only Hi-ToM_data.json loads no records",
    ),
    # issue 27 item 4: the rationale experiment (helper "gpu")
    Mutation(
        "rexp.rl_from_the_base_model",
        "experiments/rationale_experiment.py",
        'return [Job("sft", spec.start or "rationale", self.seed)]',
        "return []",
        ("tests/test_rationale_experiment.py",),
        "an RL arm starts before (and so without) its rationale model",
    ),
    Mutation(
        "rexp.fidelity_dropped_from_report",
        "experiments/experiment_report.py",
        '        entry["fidelity"] = fidelity(rows)\n',
        "",
        ("tests/test_rationale_experiment.py",),
        "metrics.json carries no right-for-the-right-reasons figures",
    ),
    Mutation(
        "rexp.rationale_arm_trains_answer_only",
        "experiments/rationale_experiment.py",
        'return (spec.form or recipe["rationale_form"]) if spec.rationale else None',
        "return None",
        ("tests/test_rationale_experiment.py",),
        "the rationale arm is trained on answer-only targets",
    ),
    Mutation(
        "rexp.run7_arm_follows_the_default_form",
        "experiments/rationale_experiment.py",
        '"rationale": Arm("tomforge_gen/train_controlled", form="events"),',
        '"rationale": Arm("tomforge_gen/train_controlled"),',
        ("tests/test_rationale_experiment.py",),
        "after the default became curriculum, run 7's rationale arm (and the RL arms on it) no longer repeats run 7",
    ),
    Mutation(
        "rexp.skip_ignores_unknown_names",
        "experiments/rationale_experiment.py",
        "    if unknown:\n        raise ValueError(f\"not planned: {', '.join(sorted(unknown))}\")\n",
        "",
        ("tests/test_rationale_experiment.py",),
        "a mistyped --skip name runs the whole plan instead of stopping",
    ),
    Mutation(
        "rexp.unpack_takes_the_first_calls_record",
        "experiments/rationale_report.py",
        "if key not in latest or call > latest[key][0]:",
        "if key not in latest or call < latest[key][0]:",
        ("tests/test_rationale_experiment.py",),
        "an earlier run's report pairs an evaluated model with the record of one lost before evaluation",
    ),
    # issue 24's walk as a new user (helper "scanray"): a train text equal to a held-out one after normalization
    Mutation(
        "scanray.exact_pair_names_heldout_twice",
        "audits/overlap.py",
        '"a_context_id": self.side_context[side_a][a]',
        '"a_context_id": self.side_context[side_b][a]',
        ("tests/audits/test_audit_overlap.py::test_exact_copy_in_other_case_names_the_train_context",),
        "an exact copy in other case or punctuation names the held-out context as its train story ('?')",
    ),
    # issue 29 (audit checks) + issue 25 item 9: one object per check; mixed-source failures name their source
    Mutation(
        "checks.source_split_sees_every_source",
        "audits/by_source.py",
        'items = facts.items.filter(pl.col("source") == source)',
        "items = facts.items",
        ("tests/audits/test_audit_checks.py",),
        "every source is judged on the pooled items: the clean source is named as failing",
    ),
    Mutation(
        "checks.findings_not_grouped_by_kind",
        "audits/check.py",
        'rows = sorted(self.rows, key=lambda r: rank.get(r["check"], len(order)))',
        "rows = list(self.rows)",
        ("tests/audits/test_audit_checks.py",),
        "audit_findings rows come in registry order, not in the table's declared order",
    ),
    Mutation(
        "checks.phase_ignored",
        "audits/checks/__init__.py",
        "if check.phase == phase and check.owns:",
        "if check.owns:",
        ("tests/audits/test_audit_checks.py",),
        "every check's tables computed in both phases: the baselines twice, the artifacts beside the overlap",
    ),
    # lead: [generate] rendering and forms in the config file reach the generator
    Mutation(
        "config.forms_not_passed",
        "flows/config.py",
        "return generation_choices(self.rendering, self.forms)[0]",
        'return generation_choices(self.rendering, ["mc"])[0]',
        ("tests/flows/test_config.py",),
        "a config asking for list questions silently generates multiple choice",
    ),
    # run 9 (helper "gpu"): an arm's own seeds; SFT processes grouped by overlapping training windows
    Mutation(
        "rexp.seeds_of_ignored",
        "experiments/rationale_experiment.py",
        "return seed in own.get(arm, seeds)",
        "return seed in seeds",
        ("tests/test_rationale_experiment.py::test_an_arm_of_its_own_seeds_runs_only_those_after_what_it_needs",),
        "a third seed of the RL arms retrains every seed of every arm",
    ),
    Mutation(
        "rexp.side_by_side_never_groups",
        "experiments/rationale_report.py",
        'if groups and record["started_at"] < max(r["started_at"] + r["seconds"] for r in groups[-1]):',
        "if False:",
        ("tests/test_rationale_experiment.py::test_side_by_side_sft_throughput_as_worked_by_hand",),
        "SFT processes trained side by side are reported one by one: no aggregate throughput",
    ),
    # issue 26: SFT's loss over chunks (tests by helper "speed"); the tile-boundary bug lives in TRL's kernel, so
    # tests/rl/test_rl_sft_loss.py plants it itself (test_a_tile_boundary_off_by_one_is_caught)
    Mutation(
        "speed.sft_chunked_loss_ignored",
        "rl/sft.py",
        "compute_loss_func=None if s.chunked_loss else full_logits_loss",
        "compute_loss_func=full_logits_loss",
        ("tests/rl/test_rl_sft_loss.py",),
        "SFT builds the full fp32 logits again: batch 128 takes 118 GB, not 75",
    ),
    Mutation(
        "speed.sft_full_logits_label_shift",
        "rl/sft.py",
        "    targets = labels[:, 1:].to(logits.device)",
        "    targets = labels[:, :-1].to(logits.device)",
        ("tests/rl/test_rl_sft_loss.py",),
        "chunked_loss=False trains each position to copy its own token",
    ),
    # lead: eval's rows are on disk before the store, so a busy lock (exit 9) loses no generation
    Mutation(
        "eval.rows_lost_on_a_busy_lock",
        "flows/commands/rl.py",
        'kept = write_rows(rows, out / "eval_rows.jsonl")',
        'kept = out / "eval_rows.jsonl"',
        ("tests/rl/test_rl_eval.py::test_eval_refused_by_a_busy_lock_keeps_its_rows",),
        "an eval refused by a busy warehouse lock throws away every generated answer",
    ),
    # lead: a one-value option given twice is refused, not silently the last one
    Mutation(
        "cli.repeated_option_last_wins",
        "flows/cli.py",
        "            cli_polish.refuse_repeated_options(command, rest)",
        "            pass",
        ("tests/flows/test_cli_polish.py::test_a_one_value_option_given_twice_is_refused",),
        "`variants --source tomi --source hitom` runs on hitom alone and says nothing",
    ),
    # lead: a dry run of a local release checks its licenses as the training would
    Mutation(
        "license.dry_run_unchecked",
        "flows/commands/rl.py",
        "    if not dry_run or local:",
        "    if not dry_run:",
        ("tests/schemas/rl/test_license_guard.py::test_train_refuses_a_split_with_a_restricted_source",),
        "`train --dry-run` prints a plan for a split the real run refuses for its license",
    ),
    Mutation(
        "atomic_files.write_in_place",
        "schemas/atomic_files.py",
        'temp = path.with_name(f".{path.name}.partial-{os.getpid()}")',
        "temp = path",
        ("tests/schemas/test_atomic_files.py",),
        "a report or eval_rows.jsonl written in place: a killed writer leaves a torn file where the old one was",
    ),
    # issue 28, list controls: agent mention controls and list answers grouped apart in the gold-rank check
    Mutation(
        "list_controls.no_opinions",
        "generators/agent_control.py",
        "        for counts in count_vectors(len(agents), MAX_AGENT_PADDING):",
        "        for counts in count_vectors(len(agents), 0):",
        ("tests/generators/test_generator_list_controls.py",),
        "list questions without mention padding: the most-mentioned agent is a knower far above chance",
    ),
    Mutation(
        "list_controls.no_stores_tail",
        "generators/agent_control.py",
        "        best = stub[costs.index(min(costs))]",
        "        best = stub[0]",
        ("tests/generators/test_generator_list_controls.py",),
        "no move verb after the last move: the last agent named with one is a knower",
    ),
    Mutation(
        "ranks.lists_pooled_with_single_golds",
        "audits/ranks.py",
        '    single = patterns.filter(pl.col("belief_order") != LIST_STRATUM)',
        "    single = patterns",
        ("tests/audits/test_audit_ranks.py",),
        "list answers pooled into the all-orders groups of single-gold items, whose null they do not follow",
    ),
    Mutation(
        "ranks.list_null_as_one_gold",
        "audits/ranks.py",
        "            count * g * (k - g) / (k - 1) * null_covariance(pattern)",
        "            count * g * null_covariance(pattern)",
        ("tests/audits/test_audit_ranks.py",),
        "a list's golds treated as independent draws: the chi-square of a g-subset is wrong",
    ),
    Mutation(
        "paired_bootstrap.narrow_interval",
        "experiments/paired_bootstrap.py",
        "np.percentile(means, [2.5, 97.5])",
        "np.percentile(means, [5, 95])",
        ("tests/test_paired_bootstrap.py",),
        "a run README's 95% interval is a 90% one: a difference looks surer than it is",
    ),
    Mutation(
        "paired_bootstrap.first_seed_only",
        "experiments/paired_bootstrap.py",
        'agg(pl.col("correct").cast(pl.Float64).mean().alias(arm))',
        'agg(pl.col("correct").cast(pl.Float64).first().alias(arm))',
        ("tests/test_paired_bootstrap.py",),
        "an arm's accuracy per item read from one seed: the other seeds are silently ignored",
    ),
    Mutation(
        "gate.threshold_off_by_comparison",
        "rl/gate.py",
        "    passed = exact >= threshold",
        "    passed = exact > threshold",
        ("tests/rl/test_rl_gate.py",),
        "a model exactly at the learning gate is reported as not learned",
    ),
    Mutation(
        "gate.rounded_accuracy_passes",
        "rl/gate.py",
        "    passed = exact >= threshold",
        "    passed = round(exact, 4) >= threshold",
        ("tests/rl/test_rl_gate.py",),
        "an accuracy just below the gate rounds up to it and passes",
    ),
    Mutation(
        "gate.untrained_items_counted",
        "rl/gate.py",
        "    if cells is None or _cell_of(row) not in cells:",
        "    if cells is None:",
        ("tests/rl/test_rl_gate.py",),
        "items of orders, forms or renderings never trained on count in the gate: a model passes on what it was not taught",
    ),
    Mutation(
        "gate.trained_items_counted",
        "rl/gate.py",
        "    return not _in_training(row, record, ids)",
        "    return True",
        ("tests/rl/test_rl_gate.py",),
        "items the model was trained on count as held out: memorized items pass the gate",
    ),
    Mutation(
        "gate.list_chance_uniform_only",
        "rl/gate.py",
        "            out[i] = max(out[i] or 0.0, everyone)",
        "            out[i] = out[i]",
        ("tests/rl/test_rl_gate.py",),
        "a list's chance ignores the constant answer 'everyone': chance printed far below what a guesser scores",
    ),
    Mutation(
        "gate.free_text_chance_not_modal",
        "rl/gate.py",
        "        best = counts.most_common(1)[0][1] / len(free)",
        "        best = 1 / len(counts)",
        ("tests/rl/test_rl_gate.py",),
        "free text's chance from the number of distinct golds, not the best constant answer's rate",
    ),
    Mutation(
        "gate.free_text_ignores_the_places",
        "rl/gate.py",
        "            out[i] = max(best, 1.0 / places) if places else best",
        "            out[i] = best",
        ("tests/rl/test_rl_gate.py",),
        "free text's chance ignores the story's places: a model naming any container looks far above chance",
    ),
    Mutation(
        "gate.eval_reads_no_record",
        "flows/commands/rl.py",
        "    record = read_training_record(model) if Path(model).is_dir() else None",
        "    record = None",
        ("tests/rl/test_rl_gate.py",),
        "tomforge eval ignores the training record: every model's gate is unknown and nothing is gated",
    ),
    Mutation(
        "transfer.did_not_learn_compared",
        "rl/transfer.py",
        "        if void and reference is not None and rendering != trained:",
        "        if False and reference is not None and rendering != trained:",
        ("tests/rl/test_rl_gate.py",),
        "the format-transfer block prints differences for a model that did not learn",
    ),
    Mutation(
        "rationale_report.ungated_comparison",
        "experiments/rationale_report.py",
        "    refused = not_compared(pair, arm_gates(entries))",
        "    refused = None",
        ("tests/rl/test_rl_gate.py",),
        "the rationale report compares arms that did not learn",
    ),
    Mutation(
        "experiment_seeds.ungated_comparison",
        "experiments/experiment_seeds.py",
        "    refused = not_compared(pair, gates_table(runs))",
        "    refused = None",
        ("tests/rl/test_rl_gate.py",),
        "the seeds' report compares arms that did not learn",
    ),
    # issue 36 item 1: one matching core for the audit and the scan (tests by helper "issue36-core")
    Mutation(
        "core.name_is_one_word",
        "audits/canonical.py",
        r'r"[^\W\d_a-z][^\W_]*(?:[ \t\-\u2010-\u2014]+(?=[^\W\d_a-z])[^\W_]*)*"',
        r'r"[^\W\d_a-z][^\W_]*"',
        ("tests/audits/test_canonical.py", "tests/audits/test_reformat_found.py", "tests/audits/test_canonical_jit.py"),
        "a two-word or hyphenated name gives two name slots: a renamed story is not found",
    ),
    Mutation(
        "core.numbers_kept",
        "audits/canonical.py",
        r'_WORDS = re.compile(r"[^\W\d_][^\W_]*|\d+[^\W\d_][^\W_]*")',
        r'_WORDS = re.compile(r"[^\W_]+")',
        ("tests/audits/test_canonical.py", "tests/audits/test_reformat_found.py", "tests/audits/test_canonical_jit.py"),
        "line numbers stay in the sentences: a story renumbered or without its numbers is not found",
    ),
    Mutation(
        "core.markup_kept",
        "audits/canonical.py",
        'if "<" not in text and "&" not in text and "[" not in text and "\\\\" not in text:',
        "if True:",
        ("tests/audits/test_canonical.py", "tests/audits/test_reformat_found.py", "tests/audits/test_canonical_jit.py"),
        "HTML tags, entities, chat-template tokens and JSON escapes stay in the sentences: a story in markup is not found",
    ),
    Mutation(
        "core.line_breaks_always_end_sentences",
        "audits/canonical.py",
        "    if _WRAPPED.search(clean):\n        readings.append(_END)\n",
        "",
        ("tests/audits/test_canonical.py", "tests/audits/test_reformat_found.py", "tests/audits/test_canonical_jit.py"),
        "a story rewrapped at another width is read as broken sentences and not found",
    ),
    Mutation(
        "core.match_pieces_split_documents",
        "audits/sentence_match.py",
        "    ends = [*(np.flatnonzero(np.diff(doc)) + 1).tolist(), len(doc)] if len(doc) else []\n",
        "    ends = list(range(1, len(doc) + 1))\n",
        ("tests/audits/test_canonical.py::test_matching_in_small_pieces_finds_what_one_piece_finds",),
        "the bounded grouping cuts a document's hits into two pieces: a story spread over them is not found",
    ),
    Mutation(
        "core.sentences_unweighted",
        "audits/sentence_match.py",
        "weight = 1.0 / df[inverse]",
        "weight = 1.0 + 0.0 * df[inverse]",
        ("tests/audits/test_canonical.py",),
        "a template sentence every story has weighs as much as a rare one",
    ),
    Mutation(
        "core.null_keeps_copies",
        "audits/sentence_match.py",
        "keep = shared / np.maximum(rare[s], 1) < p.near_copy",
        "keep = shared >= 0",
        ("tests/audits/test_scan_matching.py",),
        "a story held out twice (another source or prompt style) is its own null: it can never be found",
    ),
    Mutation(
        "core.most_sentences_not_required",
        "audits/sentence_match.py",
        '    most = pl.col("matched_sentences") >= p.min_share * pl.col("story_sentences") - 1e-9\n',
        "    most = pl.lit(True)\n",
        ("tests/audits/test_canonical.py", "tests/audits/test_reformat_found.py", "tests/audits/test_canonical_jit.py"),
        "a templated story sharing a few rare sentences with a benchmark story is called a copy",
    ),
    # issue 36 speed: the compiled sentence cutter, the counted join and the names prefilter (numba kernels, which
    # mutmut does not mutate: it leaves decorated functions alone)
    Mutation(
        "jit.run_on_reading_missing",
        "audits/canonical_jit.py",
        "    if _run_on_hint(clean, size, space):\n        readings[r] = RUN_ON\n        r += 1\n",
        "",
        ("tests/audits/test_canonical_jit.py",),
        "ToMi lines without their stops, run together, are not cut: a rewrapped ToMi story is missed",
    ),
    Mutation(
        "jit.distinct_by_abstract_key",
        "audits/canonical_jit.py",
        "    order = _distinct(named, a, woff, wlen, pool)\n",
        "    order = _distinct(key, a, woff, wlen, pool)\n",
        ("tests/audits/test_canonical_jit.py",),
        "one template told of other people in the same document counts once: the named view loses sentences",
    ),
    Mutation(
        "jit.named_words_keep_numbers",
        "audits/canonical_jit.py",
        "        if letter:\n            if size:\n                out[size] = 32\n",
        "        if True:\n            if size:\n                out[size] = 32\n",
        ("tests/audits/test_canonical_jit.py",),
        "line numbers stay in the named key: a renumbered story is not found by its names",
    ),
    Mutation(
        "jit.same_start_skipped",
        "audits/canonical_jit.py",
        "            if cut_before[0, s1] == e1 or cut_before[1, s1] == e1:\n",
        "            if cut_before[0, s1] >= 0:\n",
        ("tests/audits/test_canonical_jit.py",),
        "a later reading's longer sentence from the same start is dropped: rewrapped sentences are missed",
    ),
    Mutation(
        "jit.no_break_space_not_stripped",
        "audits/canonical_jit.py",
        "_STR_SPACE = np.array([chr(c).isspace() for c in range(256)], dtype=np.bool_)",
        "_STR_SPACE = np.array([c < 128 and chr(c).isspace() for c in range(256)], dtype=np.bool_)",
        ("tests/audits/test_canonical_jit.py",),
        "spans of sentences next to a no-break space are off by one: the evidence points at the wrong text",
    ),
    Mutation(
        "jit.bounds_table_skips_run_on_spaces",
        "audits/canonical_jit.py",
        "    stop = C_END | C_LINE | (C_SPACE if reading == RUN_ON else 0)  # the bytes an end may start at\n",
        "    stop = C_END | C_LINE  # the bytes an end may start at\n",
        ("tests/audits/test_canonical_jit.py",),
        "the byte table's fast skip passes over the white space of run-together lines: a rewrapped ToMi story is missed",
    ),
    Mutation(
        "jit.key_taken_as_named_key_with_a_name",
        "audits/canonical_jit.py",
        "named[c] = blake2b8_into(plain, _named(clean, s2, e1, plain), iv, sigma, block) if marked else key[c]\n",
        "named[c] = key[c]\n",
        ("tests/audits/test_canonical_jit_classes.py", "tests/audits/test_canonical_jit.py"),
        "a sentence with a name gets its abstracted key as its named key: the named view loses every named sentence",
    ),
    Mutation(
        "jit.blake2b_round_schedule",
        "audits/canonical_jit.py",
        "            q = r % 10\n",
        "            q = r % 9\n",
        ("tests/audits/test_canonical_jit.py",),
        "the tenth round reads the first round's message order: every key differs from hashlib's, no story is found",
    ),
    Mutation(
        "jit.counted_join_not_all_but_one",
        "audits/sentence_match.py",
        "                most = c >= min_share * total_sentences - 1e-6 or (all_but_one and c >= total_sentences - 1)\n",
        "                most = c >= min_share * total_sentences - 1e-6\n",
        (
            "tests/audits/test_canonical_jit.py",
            "tests/audits/test_reformat_found.py",
            "tests/audits/test_reformat_short.py",
        ),
        "a short story with one line dropped is not found by its names (the compiled count drops its rows)",
    ),
    Mutation(
        "jit.names_prefilter_without_wildcard",
        "audits/scan_index.py",
        "                if a != b and a != 0 and b != 0:\n",
        "                if a != b:\n",
        ("tests/audits/test_names_prefilter.py",),
        "a story told with other names is dropped before its name key is compared: names_swapped misses it",
    ),
    Mutation(
        "core.scan_without_sentences",
        "audits/scan_match.py",
        "match_sentences(index.sentences, texts),\n",
        "match_sentences(index.sentences, texts[:0]),\n",
        ("tests/audits/test_reformat_found.py",),
        "tomforge scan misses every re-formatted story",
    ),
    Mutation(
        "core.audit_without_sentences",
        "audits/overlap.py",
        "            if (ev.keys[a], ev.keys[b]) in known:\n",
        "            if True:\n",
        ("tests/audits/test_reformat_found.py",),
        "tomforge audit passes an RL file holding re-formatted held-out stories",
    ),
    Mutation(
        "core.audit_reads_heldout_through_a_train_copy",
        "audits/overlap.py",
        "    index = build_sentence_index([ev.heldout_texts[d] for d in heldout], sp)",
        "    index = build_sentence_index([ev.texts[d] for d in heldout], sp)",
        (
            "tests/audits/test_reformat_found.py::test_a_heldout_story_whose_text_key_train_copies_in_capitals_share_is_still_found",
        ),
        "a held-out story read through a train copy in capitals (one text key) has no names: a renamed copy is not found",
    ),
    # issue 36 item 7: the scan's matching (tests/audits/test_scan_matching.py)
    Mutation(
        "scan.length_prefilter_looser",
        "audits/scan_match.py",
        "return np.flatnonzero(counts >= threshold * story_sizes.min())",
        "return np.flatnonzero(counts >= threshold * threshold * story_sizes.min())",
        ("tests/audits/test_scan_matching.py",),
        "documents that can never reach the Jaccard threshold are signed (wasted work the suite did not see)",
    ),
    Mutation(
        "scan.length_prefilter_tighter",
        "audits/scan_match.py",
        "return np.flatnonzero(counts >= threshold * story_sizes.min())",
        "return np.flatnonzero(counts >= story_sizes.min())",
        ("tests/audits/test_scan_matching.py",),
        "a near duplicate shorter than every story is never signed, so never found",
    ),
    Mutation(
        "scan.weaker_kind_wins",
        "audits/scan_match.py",
        'KINDS = ("verbatim", "contained", "near_duplicate", "names_swapped", "sentences", "ngram")',
        'KINDS = ("verbatim", "near_duplicate", "contained", "sentences", "names_swapped", "ngram")',
        ("tests/audits/test_scan_matching.py",),
        "a document matching in several ways is reported under a weaker kind",
    ),
    Mutation(
        "scan.purify_counts_pairs",
        "audits/scan.py",
        "            removed += len(dropped)\n",
        "            removed += hits.height\n",
        ("tests/audits/test_scan_matching.py",),
        "a document holding two stories counts as two removals: the ledger does not reconcile",
    ),
    Mutation(
        "scan.parquet_rows_restart_each_batch",
        "audits/scan_corpus.py",
        "            rows = [first + i for i in good]",
        "            rows = [i for i in good]",
        ("tests/audits/test_scan_matching.py",),
        "parquet documents past the first batch get the ids of the first batch's rows",
    ),
    Mutation(
        "scan.shared_name_keys_kept",
        "audits/scan_index.py",
        "name_keys = {k: i for i, k in enumerate(by_name) if name_counts[k] == 1}",
        "name_keys = {k: i for i, k in enumerate(by_name)}",
        ("tests/audits/test_scan_matching.py",),
        "a name key of two benchmark stories names one of them at random",
    ),
    Mutation(
        "scan.question_inside_longer_words",
        "audits/scan.py",
        'if q and f" {q} " in padded))',
        "if q and q in padded))",
        ("tests/audits/test_scan_matching.py",),
        "a question counts as found when its words occur inside longer words",
    ),
    # issue 38: the survivors of an independent check, each now caught by a test written for it
    Mutation(
        "independent.folder_leftovers_cleared_before_the_lock",
        "hub/release.py",
        "    with hold(target):\n        folder.remove_leftovers(target)\n",
        "    folder.remove_leftovers(target)\n    with hold(target):\n",
        ("tests/warehouse/test_concurrency.py::test_a_second_folder_publisher_waits_before_clearing_leftovers",),
        "a second folder publisher deletes the release the first one is building",
    ),
    Mutation(
        "independent.label_conflicts_all_selected",
        "audits/checks/labels.py",
        "in_selection = len({i for i in ids if i in selected})",
        "in_selection = len(set(ids))",
        ("tests/audits/test_audit_check_units.py",),
        "a label conflict outside the audited selections fails the audit and is quarantined",
    ),
    Mutation(
        "independent.absent_holder_speaks",
        "generators/dialogue.py",
        "        if self.where.get(agent) is not None:",
        "        if agent in self.where:",
        ("tests/generators/test_generator_dialogue.py::test_a_statement_is_its_holders_turn_only_when_present",),
        "an agent who left the room says an opinion as an ordinary turn",
    ),
    Mutation(
        "independent.answer_balance_loosened",
        "generators/dialogue_answers.py",
        "bound = self.BOUND * (len(labels) - 1)",
        "bound = self.BOUND * len(labels)",
        ("tests/generators/test_dialogue_answer_balance.py",),
        "mid-conversation answers may lean one label further than the bound",
    ),
    Mutation(
        "independent.license_match_case_sensitive",
        "schemas/rl/licenses.py",
        '"evaluation[ -]only|not for training|no training|test[ -]only", re.IGNORECASE)',
        '"evaluation[ -]only|not for training|no training|test[ -]only", 0)',
        ("tests/schemas/rl/test_license_guard.py::test_which_licenses_forbid_training",),
        'a source licensed "NOT FOR TRAINING" lands in the train split',
    ),
    Mutation(
        "independent.gold_rank_first_flagged_position",
        "audits/checks/ranks.py",
        'worst = flagged.sort("gap", descending=True).unique(',
        'worst = flagged.sort("position").unique(',
        ("tests/audits/test_audit_check_units.py",),
        "the gold-rank finding names the first flagged position, not the largest gap",
    ),
    Mutation(
        "independent.per_split_of_one_config",
        "hub/manifest.py",
        '"per_split": {e.split: e.n_rows for e in everything},',
        '"per_split": {e.split: e.n_rows for e in exports if e.config == exports[0].config},',
        ("tests/hub/test_publish_card.py::test_per_split_counts_add_up_over_sources_sharing_a_split",),
        "the manifest's per-split counts are one source's",
    ),
    # issue 38: the survivors of the second independent check (2026-12-06), each killed by a test written for it
    Mutation(
        "independent2.scan_removed_counts_pairs",
        "audits/scan_summary.py",
        'return self.hits.select("shard", "row").unique().height if self.hits.height else 0',
        "return self.hits.height",
        ("tests/test_independent_survivors.py::test_removed_counts_documents_not_hit_pairs",),
        "a document holding two benchmark stories counts as two removed documents: scanned != kept + removed",
    ),
    Mutation(
        "independent2.sniff_utf16_before_utf32",
        "warehouse/sources/sniff.py",
        '    (\n        b"\\xff\\xfe\\x00\\x00",\n        "UTF-32 text (little-endian byte-order mark)",\n        "iconv -f UTF-32 -t UTF-8 {path} > {stem}.utf8",\n    ),\n    (b"\\xff\\xfe", "UTF-16 text (little-endian byte-order mark)", "iconv -f UTF-16 -t UTF-8 {path} > {stem}.utf8"),\n',
        '    (b"\\xff\\xfe", "UTF-16 text (little-endian byte-order mark)", "iconv -f UTF-16 -t UTF-8 {path} > {stem}.utf8"),\n    (\n        b"\\xff\\xfe\\x00\\x00",\n        "UTF-32 text (little-endian byte-order mark)",\n        "iconv -f UTF-32 -t UTF-8 {path} > {stem}.utf8",\n    ),\n',
        (
            "tests/test_independent_survivors.py::test_utf32_little_endian_is_not_sniffed_as_utf16",
            "tests/test_independent_survivors.py::test_every_magic_entry_is_sniffed_as_itself",
        ),
        "UTF-32 little-endian text is named UTF-16 and the printed iconv command decodes it wrongly",
    ),
    Mutation(
        "independent2.ngram_floor_one_down",
        "audits/scan_null.py",
        "above = float(null[n - 1 - m])",
        "above = float(null[n - m])",
        ("tests/test_independent_survivors.py::test_ngram_floor_is_the_m_plus_first_largest_null_value",),
        "the n-gram kind fires only above the m-th largest null value: a pair with p <= alpha is not reported",
    ),
    Mutation(
        "independent2.gate_split_keeps_rendering",
        "rl/gate.py",
        'train = str(record.get("train") or "").partition(":")[0]',
        'train = str(record.get("train") or "")',
        (
            "tests/test_independent_survivors.py::test_rows_of_the_training_split_named_with_its_rendering_are_left_out_of_the_gate",
        ),
        "a record trained on `cfg/split:rendering` (no item_ids) gates the model on its own training items",
    ),
    Mutation(
        "independent2.gate_describe_range_off_by_one",
        "rl/gate.py",
        "orders == list(range(min(orders), max(orders) + 1))",
        "orders == list(range(min(orders), max(orders)))",
        ("tests/test_independent_survivors.py::test_describe_writes_contiguous_orders_as_a_range",),
        "the gate line prints orders 0,1,2,3 instead of 0-3",
    ),
    Mutation(
        "independent2.rl_rows_folders_farthest_first",
        "warehouse/sources/rl_rows.py",
        "enumerate([stem, *reversed(folders)])",
        "enumerate([stem, *folders])",
        ("tests/test_independent_survivors.py::test_the_nearest_folder_names_the_split",),
        "a file's split is taken from its farthest folder, not its nearest",
    ),
    Mutation(
        "independent2.scan_report_blocked_and",
        "audits/scan_report.py",
        "blocked = int(((sx.null_coverage >= 1 - 1e-9) | (sx.story_sentences",
        "blocked = int(((sx.null_coverage >= 1 - 1e-9) & (sx.story_sentences",
        ("tests/test_independent_survivors.py::test_stories_the_sentence_kind_cannot_name_are_null_one_or_too_short",),
        "the report undercounts the stories the sentence kind cannot name",
    ),
    Mutation(
        "independent2.rl_prompt_untyped_text_part",
        "warehouse/sources/rl_prompt.py",
        'if kind in TEXT_PART_TYPES or (kind is None and "text" in part):',
        "if kind in TEXT_PART_TYPES:",
        ("tests/test_independent_survivors.py::test_an_untyped_text_part_is_text",),
        'a content part {"text": ...} without a type is dropped as a non-text part: the story loses its text',
    ),
    Mutation(
        "independent2.eval_unknown_gate_did_not_learn",
        "rl/evaluate.py",
        'return summary.get("gates", {}).get(label, {}).get("passed") is False',
        'return not summary.get("gates", {}).get(label, {}).get("passed")',
        ("tests/test_independent_survivors.py::test_unknown_and_unmeasured_gates_are_not_did_not_learn",),
        "a model without a training record or with an unmeasured gate is marked DID NOT LEARN",
    ),
    # issue 38: survivors of the second independent check (docs/independent-check-2026-12-07.md, helper "issue38-check2")
    Mutation(
        "independent3.atomic_interrupt_leaves_partial",
        "schemas/atomic_files.py",
        "    except BaseException:\n",
        "    except Exception:\n",
        ("tests/test_independent3_survivors.py::test_an_interrupt_leaves_the_old_file_and_no_partial_one",),
        "Ctrl-C while a report is written leaves a hidden .partial file beside it",
    ),
    Mutation(
        "independent3.ledger_both_sides_marked_train",
        "hub/ledger.py",
        '"SELECT item_id, min(side) FROM audit_items GROUP BY item_id"',
        '"SELECT item_id, max(side) FROM audit_items GROUP BY item_id"',
        ("tests/test_independent3_survivors.py::test_an_item_in_both_selections_is_published_as_heldout",),
        "an item selected on both sides is published marked train, though cleaning keeps it held-out",
    ),
    Mutation(
        "independent3.license_evaluation_only_hyphen",
        "schemas/rl/licenses.py",
        'r"evaluation[ -]only|',
        'r"evaluation only|',
        ("tests/test_independent3_survivors.py::test_hyphenated_and_spaced_evaluation_only_forbid_training",),
        'a source licensed "evaluation-only" lands in the train split',
    ),
    Mutation(
        "independent3.verdict_more_says_zero_more",
        "audits/verdict.py",
        'if n > MAX_EVIDENCE else ""',
        'if n >= MAX_EVIDENCE else ""',
        ("tests/test_independent3_survivors.py::test_more_says_nothing_when_every_row_is_shown",),
        'a verdict showing all of its 8 rows says "0 more"',
    ),
    Mutation(
        "independent3.verify_local_excuses_hub_files",
        "hub/verify.py",
        "if downloaded and (relative in HUB_MANAGED or relative.startswith(DOWNLOAD_BOOKKEEPING)):",
        "if relative in HUB_MANAGED or relative.startswith(DOWNLOAD_BOOKKEEPING):",
        ("tests/test_independent3_survivors.py::test_a_local_folder_with_hub_bookkeeping_files_fails_verify",),
        "a stray .gitattributes in a local release folder passes verify",
    ),
    Mutation(
        "independent3.publish_table_keeps_unaudited",
        "flows/commands/release.py",
        'unaudited="remove" if only_audited or table else "publish",',
        'unaudited="remove" if only_audited else "publish",',
        ("tests/test_independent3_survivors.py::test_publish_with_an_explicit_table_removes_the_unaudited_items",),
        "publish --table clean_items also publishes every item the audit never looked at",
    ),
    Mutation(
        "independent3.split_sizes_remainder_to_test",
        "generators/generate.py",
        "    sizes[0] += n - sum(sizes)\n",
        "    sizes[-1] += n - sum(sizes)\n",
        ("tests/test_independent3_survivors.py::test_split_sizes_give_the_remainder_to_train",),
        "the rounding remainder of a generate run lands in test, not train",
    ),
    Mutation(
        "independent3.sft_order_zero_dropped",
        "rl/sft.py",
        '+ (f" of order {order}" if order is not None else "")',
        '+ (f" of order {order}" if order else "")',
        ("tests/test_independent3_survivors.py::test_the_sft_thought_names_order_zero",),
        "a reality question's SFT thought does not say order 0",
    ),
    Mutation(
        "independent3.exploretom_yes_no_case_sensitive",
        "warehouse/sources/exploretom.py",
        '"yes_no" if answer.lower() in ("yes", "no") else "free_text",',
        '"yes_no" if answer in ("yes", "no") else "free_text",',
        ("tests/test_independent3_survivors.py::test_a_capitalized_yes_answer_is_yes_no",),
        'an ExploreToM answer "Yes" is typed free_text, not yes_no',
    ),
    Mutation(
        "independent3.audit_empty_heldout_names_train",
        "audits/run.py",
        '(("train", train_where, train), ("held-out", heldout_where, heldout))',
        '(("train", train_where, train), ("held-out", train_where, heldout))',
        ("tests/test_independent3_survivors.py::test_an_empty_heldout_selection_is_named_in_the_error",),
        "an empty held-out selection's error quotes the train condition",
    ),
    Mutation(
        "independent3.release_tags_remembered_after_swap",
        "hub/release.py",
        '            folder.remember_tags(target, target / MANIFEST_NAME)\n            checkpoint("release: tags remembered")\n            folder.swap_in(building, target)\n            checkpoint("release: swapped")\n',
        '            folder.swap_in(building, target)\n            checkpoint("release: swapped")\n            folder.remember_tags(target, target / MANIFEST_NAME)\n            checkpoint("release: tags remembered")\n',
        ("tests/test_independent3_survivors.py::test_the_tag_of_a_replaced_folder_release_never_moves",),
        "a writer killed right after the swap leaves the old tag unrecorded: --tag v1 can later mean other content",
    ),
    Mutation(
        "independent4.scan_per_source_kinds_count_hits",
        "audits/scan.py",
        'hit_kinds.filter(pl.col("kind") == k)["story"].n_unique() for k in KINDS',
        'hit_kinds.filter(pl.col("kind") == k)["story"].len() for k in KINDS',
        ("tests/test_independent4_survivors.py::test_per_source_counts_stories_not_hits",),
        "a story found in two documents counts twice in its kind's per-source column",
    ),
    Mutation(
        "independent4.sentences_coverage_at_the_null_counts",
        "audits/sentence_match.py",
        '& (pl.col("coverage") > pl.col("null_coverage") + 1e-12)',
        '& (pl.col("coverage") >= pl.col("null_coverage") - 1e-12)',
        ("tests/test_independent4_survivors.py::test_coverage_equal_to_the_null_is_not_a_hit",),
        "a document holding a same-template benchmark story also names a story it only matches at its null",
    ),
    Mutation(
        "independent4.scan_span_kept_when_sentences_also_found",
        "audits/scan_match.py",
        'pl.when(is_sentences).then(pl.col("char_start")).alias("char_start"),',
        'pl.col("char_start").alias("char_start"),',
        ("tests/test_independent4_survivors.py::test_a_verbatim_hit_also_found_by_sentences_keeps_no_span",),
        "a verbatim hit also found by sentences reports a sentence span",
    ),
    Mutation(
        "independent4.sft_empty_list_answer_blank",
        "rl/sft.py",
        'return ", ".join(truth["answer_list"]) or "none"',
        'return ", ".join(truth["answer_list"])',
        ("tests/test_independent4_survivors.py::test_an_empty_list_answer_is_none",),
        "an empty list answer's SFT target is <answer></answer>, not none",
    ),
    Mutation(
        "independent4.scan_strict_counts_pairs",
        "flows/commands/scan.py",
        'HeldOutFound(f"scan --strict: {summary.removed} corpus document(s)',
        'HeldOutFound(f"scan --strict: {summary.hits.height} corpus document(s)',
        ("tests/test_independent4_survivors.py::test_scan_strict_names_the_documents",),
        "scan --strict's error counts (document, story) hits as documents",
    ),
    Mutation(
        "independent4.remote_rate_limit_not_retried",
        "hub/remote.py",
        "frozenset({408, 429, 500, 502, 503, 504})",
        "frozenset({408, 500, 502, 503, 504})",
        ("tests/test_independent4_survivors.py::test_a_rate_limited_call_is_retried",),
        "a rate-limited (429) Hub call fails at once instead of being retried",
    ),
    Mutation(
        "independent4.selection_comment_position_zero_based",
        "warehouse/selection.py",
        "at character {comment + 1}; ",
        "at character {comment}; ",
        ("tests/test_independent4_survivors.py::test_a_comment_is_placed_at_its_1_based_character",),
        "a comment in a selection is placed one character early",
    ),
    Mutation(
        "independent4.folder_leftover_tag_history_kept",
        "hub/folder.py",
        'f".{target.name}.old-*", f".{target.name}.tags.json.*")',
        'f".{target.name}.old-*")',
        ("tests/test_independent4_survivors.py::test_leftover_tag_history_files_are_removed",),
        "a killed writer's half-written tag history file is never removed",
    ),
    # issue 38, the fourth independent check's survivors and 64 (docs/independent-check-2026-12-07c.md)
    Mutation(
        "independent5.trl_launch_drops_revision",
        "rl/trl_backend.py",
        '    if revision:\n        args += ["--revision", revision]\n',
        "",
        ("tests/test_independent5_survivors.py::test_the_trl_launch_command_passes_the_revision",),
        "train --revision v1 trains on the repo's latest commit",
    ),
    Mutation(
        "independent5.experiment_expected_seconds_shortest",
        "experiments/rationale_experiment.py",
        "return max(walls) if walls else FIRST_GUESS[kind]",
        "return min(walls) if walls else FIRST_GUESS[kind]",
        ("tests/test_independent5_survivors.py::test_expected_seconds_is_the_longest_wall_time_so_far",),
        "the queue guesses a job's time from the shortest run so far and starts one that cannot finish",
    ),
    Mutation(
        "independent5.curriculum_first_later_event",
        "generators/rationale_text.py",
        'text += f" Later, {event_sentence(later[-1], r.obj)}, but {later[-1].why_not[index]}."',
        'text += f" Later, {event_sentence(later[0], r.obj)}, but {later[0].why_not[index]}."',
        ("tests/test_independent5_survivors.py::test_the_curriculum_names_the_last_later_event_that_does_not_count",),
        "the curriculum rationale names the first later event that does not count, not the last",
    ),
    Mutation(
        "independent5.forms_empty_list_accepted",
        "generators/question_forms.py",
        "if unknown or not forms:",
        "if unknown:",
        ("tests/test_independent5_survivors.py::test_no_question_forms_is_refused",),
        "an empty forms list is accepted instead of refused",
    ),
    Mutation(
        "independent5.scan_report_documents_counts_hits",
        "audits/scan_report.py",
        'docs = hits["doc_id"].n_unique() if hits.height else 0',
        "docs = hits.height",
        ("tests/test_independent5_survivors.py::test_the_scan_report_counts_the_documents_with_hits",),
        "the scan report says N hits in N documents: hits counted as documents",
    ),
    Mutation(
        "independent5.publish_deletes_hub_managed",
        "hub/publish.py",
        "plan.delete = sorted(p for p in remote if p not in HUB_MANAGED and p not in local)",
        "plan.delete = sorted(p for p in remote if p not in local)",
        ("tests/test_independent5_survivors.py::test_a_publish_never_deletes_the_hubs_gitattributes",),
        "a publish deletes the Hub's .gitattributes",
    ),
    Mutation(
        "independent5.sniff_tar_magic_off_by_one",
        "warehouse/sources/sniff.py",
        "_TAR_MAGIC_AT = 257",
        "_TAR_MAGIC_AT = 256",
        ("tests/test_independent5_survivors.py::test_a_tar_archive_is_recognized",),
        "a tar archive given as input is not recognized as one",
    ),
    Mutation(
        "independent5.config_env_overrides_flag",
        "flows/config.py",
        'if path is None and os.environ.get("TOMFORGE_CONFIG"):',
        'if os.environ.get("TOMFORGE_CONFIG"):',
        ("tests/test_independent5_survivors.py::test_an_explicit_config_path_wins_over_the_environment",),
        "$TOMFORGE_CONFIG wins over an explicit --config",
    ),
    Mutation(
        "independent5.eval_seconds_summed_over_processes",
        "flows/commands/rl.py",
        "seconds=max(s.seconds for _, _, s in parts)",
        "seconds=sum(s.seconds for _, _, s in parts)",
        ("tests/test_independent5_survivors.py::test_eval_on_several_processes_reports_the_slowest_ones_seconds",),
        "eval --gpus N sums the processes' seconds: tokens/s reported N times too low",
    ),
    # the fifth independent check's survivors (docs/independent-check-2026-12-07d.md)
    Mutation(
        "independent6.summary_warn_action_hidden",
        "audits/summary.py",
        'if v.status != "pass":',
        'if v.status == "fail":',
        ("tests/test_independent6_survivors.py::test_a_warning_check_shows_its_action",),
        "a warning check's action is not printed under it",
    ),
    Mutation(
        "independent6.validate_missing_field_names_present_one",
        "warehouse/validate.py",
        "missing = [name for name in error.validator_value if name not in error.instance]",
        "missing = [name for name in error.validator_value if name in error.instance]",
        ("tests/test_independent6_survivors.py::test_a_record_missing_one_field_is_reported_under_that_field",),
        "a rejected record's missing field is reported as a field it has",
    ),
    Mutation(
        "independent6.fingerprint_folder_files_by_name",
        "warehouse/fingerprint.py",
        "name = file.name if file == path else file.relative_to(path).as_posix()",
        "name = file.name",
        ("tests/test_independent6_survivors.py::test_a_folder_fingerprint_tells_where_a_file_lies",),
        "a file moved to another subfolder keeps the folder's fingerprint: a stale staged source is reused",
    ),
    Mutation(
        "independent6.versions_missing_left_out",
        "schemas/versions.py",
        "            if missing is not None:\n                versions[name] = missing\n",
        "            pass\n",
        ("tests/test_independent6_survivors.py::test_a_missing_tool_is_recorded_as_missing_when_asked",),
        "a tool that is not installed is left out of an audit run's tools instead of recorded as absent",
    ),
    Mutation(
        "independent6.by_source_empty_heldout_kept",
        "audits/by_source.py",
        "has_heldout = facts.has_heldout and heldout.height > 0",
        "has_heldout = facts.has_heldout",
        (
            "tests/test_independent6_survivors.py::test_a_source_without_held_out_items_is_checked_without_a_held_out_side",
        ),
        "a source with no held-out items is recomputed against an empty held-out side",
    ),
    Mutation(
        "independent6.prompts_26_options_numbered",
        "schemas/rl/prompts.py",
        "if n <= len(string.ascii_uppercase):",
        "if n < len(string.ascii_uppercase):",
        ("tests/test_independent6_survivors.py::test_twenty_six_options_are_lettered_and_twenty_seven_numbered",),
        "26 options are numbered instead of lettered A-Z",
    ),
    Mutation(
        "independent6.scan_jaccard_zero_accepted",
        "audits/scan_config.py",
        "if not 0 < self.jaccard_threshold <= 1 or not 0 < self.containment_threshold <= 1:",
        "if not 0 <= self.jaccard_threshold <= 1 or not 0 < self.containment_threshold <= 1:",
        ("tests/test_independent6_survivors.py::test_a_jaccard_threshold_of_zero_is_refused",),
        "scan --jaccard 0 is accepted",
    ),
    Mutation(
        "independent6.gate_facts_overwrite_stored_rows",
        "experiments/gate_report.py",
        "if filled.get(key) is None and fact.get(key) is not None:",
        "if fact.get(key) is not None:",
        ("tests/test_independent6_survivors.py::test_release_facts_fill_only_what_the_stored_row_lacks",),
        "the release's chance overwrites the one the eval row stored",
    ),
    Mutation(
        "independent6.freshness_message_counts_swapped",
        "audits/freshness.py",
        'f"({self.content_changed} with new content, {self.removed} removed, {self.selection_changed} new "',
        'f"({self.removed} with new content, {self.content_changed} removed, {self.selection_changed} new "',
        ("tests/test_independent6_survivors.py::test_the_stale_audit_line_counts_each_kind_in_its_place",),
        "the stale-audit line swaps the removed and new-content counts",
    ),
    Mutation(
        "independent6.lsh_bucket_at_max_skipped",
        "audits/lsh.py",
        '    skipped = buckets.filter(pl.col("size") > max_bucket).height\n    buckets = buckets.filter(pl.col("size") <= max_bucket).with_row_index("bucket")\n',
        '    skipped = buckets.filter(pl.col("size") >= max_bucket).height\n    buckets = buckets.filter(pl.col("size") < max_bucket).with_row_index("bucket")\n',
        ("tests/test_independent6_survivors.py::test_a_bucket_of_exactly_max_bucket_members_is_searched",),
        "an LSH bucket of exactly max_bucket members is skipped",
    ),
    Mutation(
        "independent6.shortcuts_memory_counted_as_order_0",
        "generators/shortcuts.py",
        'order = "memory" if record["question_type"] == "memory" else str(record["belief_order"])',
        'order = str(record["belief_order"])',
        ("tests/test_independent6_survivors.py::test_memory_questions_are_counted_apart_from_order_zero",),
        "memory questions are counted under order 0 in the balance summary",
    ),
    Mutation(
        "independent6.staging_partial_left_behind",
        "flows/staging.py",
        "shutil.rmtree(partial, ignore_errors=True)",
        "",
        ("tests/test_independent6_survivors.py::test_a_killed_runs_partial_folder_leaves_nothing_behind",),
        "a killed run's partial staging folder is reused: its stray files are staged",
    ),
    # issue 38, the sixth independent check's survivors (docs/independent-check-2026-12-07e.md)
    Mutation(
        "independent7.publish_dry_run_files_without_manifest",
        "hub/publish_and_verify.py",
        "{len(release.manifest['files']) + 1} files",
        "{len(release.manifest['files'])} files",
        ("tests/test_independent7_survivors.py::test_a_dry_run_counts_the_files_a_folder_publish_writes",),
        "publish --dry-run to a folder counts the files without the manifest itself",
    ),
    Mutation(
        "independent7.launch_trl_limit_not_passed",
        "rl/launch.py",
        "args.dataset, args.revision, args.train, args.limit)",
        "args.dataset, args.revision, args.train)",
        ("tests/test_independent7_survivors.py::test_the_launcher_passes_the_limit_to_the_training",),
        "python -m tomforge.rl.launch trl --limit N trains on the whole split",
    ),
    Mutation(
        "independent7.rlfiles_answer_field_not_passed",
        "flows/rl_ingest_options.py",
        "RLFileOptions(split=split, answer_field=answer_field or None, markers=markers)",
        "RLFileOptions(split=split, markers=markers)",
        ("tests/test_independent7_survivors.py::test_the_answer_field_flag_picks_the_answer",),
        "ingest --source rlfiles --answer-field F ignores F",
    ),
    Mutation(
        "independent7.label_conflicts_quarantine_counts_questions",
        "audits/checks/labels.py",
        'f"`tomforge clean` quarantines {in_selection} items; check which answer is right"',
        'f"`tomforge clean` quarantines {n} items; check which answer is right"',
        ("tests/test_independent7_survivors.py::test_the_quarantine_line_counts_selected_items_not_questions",),
        "the quarantine line counts conflicting questions, not selected items",
    ),
    Mutation(
        "independent7.html_long_token_at_threshold_not_marked",
        "audits/html.py",
        '_LONG = re.compile(r"[^\\s]{%d,}" % LONG_TOKEN)',
        '_LONG = re.compile(r"[^\\s]{%d}[^\\s]+" % LONG_TOKEN)',
        ("tests/test_independent7_survivors.py::test_a_token_of_exactly_long_token_characters_may_break",),
        "a token of exactly LONG_TOKEN characters is not breakable in the HTML report",
    ),
    Mutation(
        "independent7.shortcut_table_last_and_most_swapped",
        "audits/shortcuts.py",
        '    "last_mentioned": "last",\n    "most_mentioned": "most",\n',
        '    "last_mentioned": "most",\n    "most_mentioned": "last",\n',
        ("tests/test_independent7_survivors.py::test_the_shortcut_table_gives_each_heuristic_its_own_column",),
        "the shortcut table's last- and most-mentioned columns read each other's heuristic",
    ),
    Mutation(
        "independent7.context_ref_first_by_text_not_record",
        "audits/evidence.py",
        "first = min(ref_list, key=lambda r: (len(r), r))",
        "first = min(ref_list)",
        ("tests/test_independent7_survivors.py::test_a_story_is_named_by_its_first_question_in_record_order",),
        "a story is named by its lexically first source_ref (#10 before #4)",
    ),
    Mutation(
        "independent7.hitom_first_order_really_dropped",
        "generators/real/style.py",
        '        if len(chain) == 1:\n            return f"Where does {chain[0]} really think the {obj} is?"\n',
        "",
        ("tests/test_independent7_survivors.py::test_hitoms_first_order_question_keeps_its_really",),
        "HiToM's first-order question loses its 'really'",
    ),
    Mutation(
        "independent7.numbered_lines_gap_accepted",
        "generators/real/sentences.py",
        "if int(match.group(1)) != len(out) + 1:",
        "if int(match.group(1)) <= len(out):",
        ("tests/test_independent7_survivors.py::test_a_gap_in_a_storys_numbering_is_refused",),
        "a gap in a story's numbering is accepted",
    ),
    Mutation(
        "independent7.trl_one_generation_accepted",
        "rl/trl_settings.py",
        'num_generations: int = flag(8, "--num-generations", min=2,',
        'num_generations: int = flag(8, "--num-generations", min=1,',
        ("tests/test_independent7_survivors.py::test_train_refuses_one_generation_per_prompt",),
        "train --num-generations 1 is accepted (RLOO needs two samples per prompt)",
    ),
    # the seventh independent check's survivors (docs/independent-check-2026-12-07f.md)
    Mutation(
        "independent8.bigtom_identical_answers_names_belief_field",
        "warehouse/sources/bigtom.py",
        "_answer_field(variable),",
        '"belief_answer_aware",',
        (
            "tests/test_independent8_survivors.py::test_an_identical_action_answer_pair_is_rejected_naming_the_action_field",
        ),
        "a BigToM row with identical action answers is rejected naming belief_answer_aware",
    ),
    Mutation(
        "independent8.tomi_trace_one_trailing_blank_dropped",
        "warehouse/sources/tomi.py",
        "while lines and not lines[-1]:",
        "if lines and not lines[-1]:",
        (
            "tests/test_independent8_survivors.py::test_a_trace_ending_in_several_blank_lines_still_gives_every_example_its_trace",
        ),
        "a ToMi trace ending in two blank lines is misaligned: the whole file refused",
    ),
    Mutation(
        "independent8.fantom_identical_answers_unstripped",
        "warehouse/sources/fantom.py",
        "if correct.strip() == wrong.strip():",
        "if correct == wrong:",
        ("tests/test_independent8_survivors.py::test_belief_answers_differing_only_by_spaces_are_an_ambiguous_choice",),
        "a FANToM belief question whose answers differ only by spaces is accepted: an ambiguous choice",
    ),
    Mutation(
        "independent8.higher_orders_middle_order_left_out",
        "audits/artifacts.py",
        "high = sorted(points)[len(points) // 2 :]",
        "high = sorted(points)[(len(points) + 1) // 2 :]",
        (
            "tests/test_independent8_survivors.py::test_the_higher_half_of_an_odd_number_of_orders_includes_the_middle_one",
        ),
        "the middle order of an odd number of orders is left out of the higher half",
    ),
    Mutation(
        "independent8.baselines_intervals_not_bonferroni",
        "audits/baselines.py",
        "alpha = p.alpha / max(len(plan), 1)",
        "alpha = p.alpha",
        (
            "tests/test_independent8_survivors.py::test_the_baseline_intervals_are_bonferroni_corrected_over_the_planned_tests",
        ),
        "the partial-input baselines' intervals lose their Bonferroni correction: more baselines flagged",
    ),
    Mutation(
        "independent8.oracle_report_agreement_over_items",
        "generators/real/report.py",
        "{agree / max(parsed, 1):.3f}",
        "{agree / max(items, 1):.3f}",
        ("tests/test_independent8_survivors.py::test_the_oracle_reports_agreement_is_over_the_parsed_items",),
        "the oracle report's agreement divides by every item, not by the parsed ones",
    ),
    Mutation(
        "independent8.gguf_suffix_case_sensitive",
        "rl/models.py",
        "return str(spec).lower().endswith(GGUF_SUFFIX)",
        "return str(spec).endswith(GGUF_SUFFIX)",
        ("tests/test_independent8_survivors.py::test_a_gguf_suffix_in_any_case_is_a_gguf_model",),
        "MODEL.GGUF is refused as 'model not found'",
    ),
    Mutation(
        "independent8.variants_disagree_counts_unparsed",
        "flows/commands/ingest.py",
        'rows[(key, "disagree")] += check.agrees is False',
        'rows[(key, "disagree")] += not check.agrees',
        (
            "tests/test_independent8_survivors.py::test_variants_oracle_table_does_not_count_unparsed_items_as_disagreeing",
        ),
        "tomforge variants' oracle table counts unparsed items as disagreeing",
    ),
    Mutation(
        "independent8.stage_interrupt_not_ended",
        "schemas/progress.py",
        "except BaseException:",
        "except Exception:",
        (
            "tests/test_independent8_survivors.py::test_a_stage_interrupted_by_ctrl_c_is_ended_as_failed_and_the_interrupt_raised_on",
        ),
        "a stage interrupted by Ctrl-C is never ended: no 'failed after' line",
    ),
    # issue 38, CI time: a mutant's file keeps its numba cache (bench/numba_cache.py)
    Mutation(
        "numba_cache.stamp_not_put_back",
        "bench/numba_cache.py",
        "            os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))\n",
        "",
        ("tests/test_numba_cache_kept.py",),
        "a mutant's file keeps the time stamp of its last write: numba compiles the original kernels again",
    ),
)


def copy_repository(dest: Path) -> None:
    """The working tree as git sees it (tracked plus untracked files that are not ignored)."""
    listing = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        .stdout.decode("utf-8")
        .split("\0")
    )
    for name in filter(None, listing):
        source = REPO / name
        if source.is_symlink():  # tomforge/<package> -> ../<package>: the copy links to its own folders
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(source), target)
        elif source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@dataclass(frozen=True)
class PytestRun:
    code: int  # pytest's exit status (1: tests failed; -1: timed out)
    seconds: float
    last: str  # the last line of its output
    failed: str | None  # the node id of the first failed test


def test_env(copy: Path) -> dict[str, str]:
    """The environment of a pytest run in `copy` (cold or warm): the copy's code first, no bytecode written."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    real = os.environ.get("TOMFORGE_REAL_SAMPLES") or str(REPO.parent / "shared" / "real-samples")
    env["TOMFORGE_REAL_SAMPLES"] = str(Path(real).resolve())  # the copy has no ../shared next to it
    return env


def summarize(code: int, seconds: float, output: str, timeout: float) -> PytestRun:
    """One pytest run's verdict from its exit status and output (-1: timed out)."""
    if code == -1:
        return PytestRun(-1, seconds, f"timed out after {timeout:.0f} s", None)
    lines = [line for line in output.splitlines() if line.strip()]
    failed = next((line[7:].split(" - ")[0].strip() for line in lines if line.startswith("FAILED ")), None)
    return PytestRun(code, seconds, (lines[-1] if lines else ""), failed)


def run_tests(
    copy: Path, tests: tuple[str, ...], python: str, timeout: float, warm: WarmPytest | None = None
) -> PytestRun:
    """pytest on `tests` inside `copy`, stopping at the first failure: a fresh process, or a child of `warm`."""
    args = ["-x", "-q", "-p", "no:cacheprovider", *tests]
    if warm is not None:
        return summarize(*warm.run(args, timeout), timeout)
    start = time.monotonic()
    try:
        done = subprocess.run(
            [python, "-m", "pytest", *args],
            cwd=copy,
            env=test_env(copy),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return summarize(-1, time.monotonic() - start, "", timeout)
    return summarize(done.returncode, time.monotonic() - start, done.stdout + done.stderr, timeout)


def first_catcher(m: Mutation, catchers: dict[str, str]) -> str | None:
    """The recorded catcher of `m` when it is one of `m`'s own tests (a node of a listed file, or a listed node)."""
    node = catchers.get(m.name)
    if node is None:
        return None
    return node if any(node == t or node.startswith((f"{t}::", f"{t}[")) for t in m.tests) else None


def judge_tests(
    copy: Path, m: Mutation, catchers: dict[str, str], python: str, timeout: float, warm: WarmPytest | None = None
) -> PytestRun:
    """The mutation's tests, its recorded catcher first: caught by it, or the whole set's run."""
    node = first_catcher(m, catchers)
    if node is not None:
        first = run_tests(copy, (node,), python, timeout, warm)
        if first.code == 1:
            return first
    return run_tests(copy, m.tests, python, timeout, warm)


def apply(copy: Path, mutation: Mutation) -> str | None:
    """Write the mutated file into `copy`; the original text to restore, or None when stale."""
    path = copy / mutation.file
    text = path.read_text(encoding="utf-8")
    if text.count(mutation.original) != 1:
        return None
    path.write_text(text.replace(mutation.original, mutation.mutated), encoding="utf-8")
    return text


def make_copies(tmp: Path, jobs: int, python: str, cold: bool) -> queue.Queue[tuple[Path, WarmPytest | None]]:
    """One copy of the tree per job, each with its warm pytest server (none when `cold`)."""
    copies: queue.Queue[tuple[Path, WarmPytest | None]] = queue.Queue()
    for i in range(max(1, jobs)):
        copy = tmp / f"repo{i}"
        copy_repository(copy)
        copies.put((copy, None if cold else WarmPytest(copy, python, test_env(copy))))
    return copies


def close_servers(copies: queue.Queue[tuple[Path, WarmPytest | None]]) -> None:
    """Stop the copies' warm servers (each waits for its child to end)."""
    for _, warm in list(copies.queue):
        if warm is not None:
            warm.close()


def choose(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Mutation]:
    """The mutations the command line asks for (`--only`, `--sample`), with the planted no-op of `--plant-noop`."""
    unknown = set(args.only) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.sample:
        chosen = spread(chosen, args.sample)
    if args.plant_noop:  # the first chosen entry's snippet replaced by itself: nothing changes, so nothing fails
        m = chosen[0]
        chosen.append(Mutation("planted.no_op", m.file, m.original, m.original, m.tests, "a planted no-op: SURVIVED"))
    return chosen


def spread(chosen: list[Mutation], n: int) -> list[Mutation]:
    """`n` of `chosen` at even steps through it (first included), for a timing sample across the registry."""
    if n >= len(chosen):
        return chosen
    return [chosen[i * len(chosen) // n] for i in range(n)]


def _parser() -> argparse.ArgumentParser:
    """The command line (module docstring's first paragraph as its description)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], help="run only these mutations (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests")
    parser.add_argument("--python", default=sys.executable, help="interpreter with the test dependencies")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per pytest run")
    parser.add_argument("--skip-baseline", action="store_true", help="do not first check the unmutated tests pass")
    parser.add_argument("--record", action="store_true", help=f"rewrite {CATCHERS.name} from this run's catchers")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="mutations tested at once, each in its own copy of the tree (default: one per core)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="a fresh pytest process per run (slower) instead of a child forked from a warm one (bench/warm_pytest.py)",
    )
    parser.add_argument("--sample", type=int, default=0, help="only N of the chosen mutations, spread evenly over them")
    parser.add_argument(
        "--plant-noop",
        action="store_true",
        help="add a mutation that changes nothing (a self-check: it must be reported SURVIVED, and the exit is 1)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    chosen = choose(parser, args)
    if args.list:
        for m in chosen:
            print(f"{m.name:42} {m.file:32} {' '.join(m.tests)}")
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tomforge-mutations-") as tmp:
        copies = make_copies(Path(tmp), args.jobs, args.python, args.cold)
        first, first_warm = copies.queue[0]
        if not args.skip_baseline:
            tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
            base = run_tests(first, tests, args.python, args.timeout * 2, first_warm)
            print(f"baseline (no mutation): pytest exit {base.code} in {base.seconds:.0f} s: {base.last}", flush=True)
            if base.code != 0:
                print("the unmutated tests do not pass: fix them first", file=sys.stderr)
                return 1

        catchers: dict[str, str] = json.loads(CATCHERS.read_text(encoding="utf-8")) if CATCHERS.exists() else {}
        found: dict[str, str] = {}

        def judge(m: Mutation) -> str:
            """One mutation in a free copy of the tree: its verdict line."""
            where, warm = copies.get()
            try:
                with numba_cache_kept(where / m.file):
                    original = apply(where, m)
                    if original is None:
                        return f"STALE     {m.name}: the snippet does not occur exactly once in {m.file}"
                    try:
                        run = judge_tests(where, m, catchers, args.python, args.timeout, warm)
                    finally:
                        (where / m.file).write_text(original, encoding="utf-8")
            finally:
                copies.put((where, warm))
            if run.code == 1 and run.failed:
                found[m.name] = run.failed
            verdict = "caught" if run.code == 1 else ("SURVIVED" if run.code == 0 else f"ERROR({run.code})")
            by = f" [by {run.failed}]" if run.code == 1 and run.failed else ""
            return f"{verdict:9} {m.name} ({run.seconds:.0f} s){by}: {m.why} | {run.last}"

        caught = 0
        try:
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                for line in pool.map(judge, chosen):  # printed in the table's order
                    caught += line.startswith("caught ")
                    print(line, flush=True)
        finally:
            close_servers(copies)
    if args.record:
        kept = {name: node for name, node in catchers.items() if name in {m.name for m in MUTATIONS}}
        CATCHERS.write_text(json.dumps(dict(sorted({**kept, **found}.items())), indent=1) + "\n", encoding="utf-8")
    print(f"caught {caught}/{len(chosen)} mutations in {time.monotonic() - started:.0f} s")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
