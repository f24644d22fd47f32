"""Does every need of the carried wheels hold, beside the GPU machine's image? (issue 40, the vLLM carry)

`pip install --no-deps --target` (the only install there: no registry) checks nothing, so this reads each carried
distribution's `Requires-Dist` (markers for Python 3.12 on Linux x86-64; extras followed where asked for) and looks
the need up among what will be there. On the CPU machine (`--wheels DIR --image FILE --pins FILE`): the wheels'
METADATA beside the image's package names (device/KINDS.md) and the versions known of them (the pins file); a need
met by an image package of unknown version is listed apart, not failed. On the GPU machine (`--installed SITE`):
the distributions Python finds there (SITE first on sys.path), each need checked against the version it would
import. Prints one line per unmet need; exit 1 if any.
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_metadata(path: Path) -> tuple[str, str, list[str]]:
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        meta = Parser().parsestr(z.read(name).decode())
    return meta["Name"], meta["Version"], meta.get_all("Requires-Dist") or []


def unmet(carried: dict[str, tuple[str, list[str]]], present: dict[str, str | None]) -> tuple[list[str], list[str]]:
    """(failures, unknown): needs of the carried distributions not met by `present` (name -> version, None when
    the version is not known), following the extras a need asks for."""
    failures, unknown, seen = [], [], set()
    todo = [(name, "") for name in carried]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen or name not in carried:
            continue
        seen.add((name, extra))
        for line in carried[name][1]:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({**ENV, "extra": extra}):
                continue
            if extra and (req.marker is None or "extra" not in str(req.marker)):
                continue  # the base needs, checked once with extra ""
            need, have = norm(req.name), present.get(norm(req.name), "absent")
            label = f"{name}{'[' + extra + ']' if extra else ''} needs {req}"
            if have == "absent":
                failures.append(f"{label}: absent")
            elif have is None:
                unknown.append(f"{label}: the image's (version not known here)")
            elif not req.specifier.contains(Version(have), prereleases=True):
                failures.append(f"{label}: {have} there")
            todo += [(need, e) for e in req.extras]
    return sorted(set(failures)), sorted(set(unknown))


def from_wheels(folder: Path, image: Path, pins: Path) -> tuple[dict, dict]:
    carried = {}
    for path in sorted(folder.glob("*.whl")):
        name, version, requires = wheel_metadata(path)
        carried[norm(name)] = (version, requires)
    present: dict[str, str | None] = {norm(n.strip()): None for n in image.read_text().split(",") if n.strip()}
    for line in pins.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            present[norm(name)] = version.strip()
    present.update({name: version for name, (version, _) in carried.items()})  # carried ones shadow the image's
    return carried, present


def from_installed(site: Path) -> tuple[dict, dict]:
    from importlib.metadata import distributions

    carried, present = {}, {}
    for dist in distributions():  # in sys.path order: the first of a name is the one Python imports
        name = norm(dist.metadata["Name"])
        if name in present:
            continue
        present[name] = dist.version
        if Path(str(dist.locate_file(""))).resolve() == site.resolve():
            carried[name] = (dist.version, dist.requires or [])
    return carried, present


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder of the carried wheels (CPU machine)")
    parser.add_argument("--image", type=Path, help="the image's package names, comma-separated (KINDS.md)")
    parser.add_argument("--pins", type=Path, help="NAME==VERSION lines: the image versions known")
    parser.add_argument("--installed", type=Path, help="the --target folder the wheels went to (GPU machine)")
    args = parser.parse_args(argv)
    carried, present = (
        from_installed(args.installed) if args.installed else from_wheels(args.wheels, args.image, args.pins)
    )
    failures, unknown = unmet(carried, present)
    print(
        f"{len(carried)} carried distributions; {len(failures)} needs unmet; {len(unknown)} met by the image, "
        "version not known here"
    )
    for line in failures:
        print("UNMET", line)
    for line in unknown:
        print("IMAGE", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
