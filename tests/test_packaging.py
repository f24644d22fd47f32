"""The installed package is the checkout's: every data file ships in the wheel, and no path is computed from the
checkout's layout (issue 38: `rl/verl_keys.txt` was missing from the wheel, so `train --backend verl` failed in a
regular install). `.ci/wheel_check` builds the wheel, installs it in a fresh venv and runs rebuild and the dry
runs from it; these are the fast checks of the same facts."""

from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

from tomforge.rl.verl_backend import package_parent

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("audits", "flows", "generators", "hub", "rl", "schemas", "warehouse", "tomforge")


def shipped(path: str, package_data: dict[str, list[str]]) -> bool:
    """Whether setuptools' package-data globs (as pyproject.toml writes them) take this tracked file."""
    name = Path(path).name
    if any(fnmatch.fnmatch(name, pattern) for pattern in package_data.get("*", [])):
        return True
    for package, patterns in package_data.items():
        folder = package.removeprefix("tomforge.").replace(".", "/") + "/"
        rest = path.removeprefix(folder)
        if rest != path and any(fnmatch.fnmatch(rest, p.replace("**/", "*")) for p in patterns):
            return True
    return False


def test_every_data_file_of_the_package_is_in_the_wheel() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    package_data = config["tool"]["setuptools"]["package-data"]
    tracked = subprocess.run(
        ["git", "ls-files", "-s", *PACKAGES], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # mode 120000: the links in tomforge/; everything else that is not Python must be package data
    files = [line.split("\t", 1)[1] for line in tracked if not line.startswith("120000")]
    data = [f for f in files if not f.endswith(".py")]
    assert "rl/verl_keys.txt" in data
    assert [f for f in data if not shipped(f, package_data)] == []


def test_package_parent_in_a_checkout_and_in_site_packages(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "tomforge").mkdir(parents=True)
    (checkout / "tomforge" / "__init__.py").write_text("")
    assert package_parent(checkout) == checkout  # rl/ beside tomforge/ in the checkout
    site = tmp_path / "site-packages"
    (site / "tomforge" / "rl").mkdir(parents=True)
    (site / "tomforge" / "__init__.py").write_text("")
    assert package_parent(site / "tomforge") == site  # rl/ inside the installed tomforge/
    assert (package_parent() / "tomforge" / "__init__.py").is_file()
