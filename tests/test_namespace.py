"""The project installs one namespace, `tomforge`: a user's own `flows` or `hub` package next to it
is theirs, and every project module imports as `tomforge.<folder>...`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("audits", "flows", "generators", "hub", "rl", "schemas", "warehouse")


def test_each_folder_is_linked_into_the_namespace() -> None:
    for name in FOLDERS:
        link = REPO / "tomforge" / name
        assert link.is_symlink() and link.resolve() == (REPO / name).resolve(), name


def test_a_users_own_flows_and_hub_packages_do_not_collide(tmp_path: Path) -> None:
    for name in ("flows", "hub", "audits"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"MINE = '{name}'\n")
    code = (
        "import flows, hub, audits\n"
        "import tomforge.flows.cli, tomforge.hub.manifest, tomforge.audits.run\n"
        "assert (flows.MINE, hub.MINE, audits.MINE) == ('flows', 'hub', 'audits')\n"
        "assert not hasattr(tomforge.flows.cli, 'MINE') and hasattr(tomforge.flows.cli, 'app')\n"
        "print('ok')\n"
    )
    env_path = str(REPO)  # the checkout's tomforge/, as an installed copy would provide it
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{tmp_path}:{env_path}", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
