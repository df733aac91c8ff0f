"""deploy/ names only what exists: every `videocopies` command it runs is one the CLI takes, every
VIDEOCOPIES_* variable it sets is one settings reads (for a role's service: one that role reads),
every variable a role requires is given to it, every port published or probed is the one the
role listens on, and the units stop and confine the roles as the roles expect."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pytest
import yaml

from videocopies import cli
from videocopies.settings.commands import database_url
from videocopies.settings.control import ControlSettings
from videocopies.settings.core import CoreSettings
from videocopies.settings.edge import EdgeSettings
from videocopies.settings.worker import WorkerNodeSettings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
# settings/ reads every variable; the media limits it takes from telegram_limits.MediaLimits.from_env.
SETTINGS_SOURCES = [*(ROOT / "src/videocopies/settings").glob("*.py"), ROOT / "src/videocopies/telegram_limits.py"]
NAME = re.compile(r"VIDEOCOPIES_[A-Z0-9_]+")
SECRET = "a-secret-the-operator-supplies-" * 2  # for ${VAR:?} in compose and empty values in env files
LOOPBACK = {"127.0.0.1", "localhost", "::1"}

ROLES: dict[str, Callable[[Mapping[str, str]], Any]] = {
    "core": lambda env: CoreSettings.from_env(database_url(None, env), env),
    "edge": EdgeSettings.from_env,
    "worker": WorkerNodeSettings.from_env,
    "control": lambda env: database_url(None, env) and ControlSettings.from_env(env),
}


@dataclass
class Launch:
    """One `videocopies ...` an artefact runs, with the environment and ports it gives it."""

    where: str
    argv: list[str]
    env: dict[str, str]
    ports: list[int] = field(default_factory=list)  # published, or probed by a health check
    probes: list[str] = field(default_factory=list)  # the paths health checks ask for
    unit: dict[str, list[str]] | None = None  # a systemd unit's [Service] entries

    @property
    def role(self) -> str | None:
        return self.argv[0] if self.argv and self.argv[0] in ROLES else None


class Reads(Mapping[str, str]):
    """An environment that remembers which variables were read."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env, self.read = env, set[str]()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self._env[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._env)

    def __len__(self) -> int:
        return len(self._env)


def settings_variables() -> tuple[set[str], list[re.Pattern[str]]]:
    """Every variable name settings' sources spell out, and the f-string names they build."""
    names, templates = set[str](), []
    for source in SETTINGS_SOURCES:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
                names.add(node.value)
            elif isinstance(node, ast.JoinedStr):  # a name built from parts: VIDEOCOPIES_{kind}_VALID_DAYS
                pattern = "".join(str(p.value) if isinstance(p, ast.Constant) else "[A-Z0-9_]+" for p in node.values)
                if re.fullmatch(r"VIDEOCOPIES_[\w\[\]+-]*", pattern):
                    templates.append(re.compile(pattern))
    return names, templates


def unknown_variables(names: set[str]) -> set[str]:
    known, templates = settings_variables()
    return {n for n in names if n not in known and not any(t.fullmatch(n) for t in templates)}


class Parsed(Exception):
    """The CLI parsed its arguments; the command is not run."""


def cli_refuses(argv: list[str]) -> str | None:
    """Why the CLI's own parser refuses `argv`, or None: nothing past the parsing runs."""
    original = argparse.ArgumentParser.parse_args

    def parse_only(parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        original(parser, *args, **kwargs)
        raise Parsed

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_only):
        try:
            cli.main(argv)
        except Parsed:
            return None
        except SystemExit:
            return f"`videocopies {' '.join(argv)}` is not a command the CLI takes"
    return f"`videocopies {' '.join(argv)}` ran instead of being parsed"


def role_settings(launch: Launch, token_file: Path) -> tuple[Any, set[str]]:
    """The role's settings built from the launch's environment, and the variables it read."""
    file = {"VIDEOCOPIES_NODE_TOKEN_FILE": str(token_file)} if "VIDEOCOPIES_NODE_TOKEN_FILE" in launch.env else {}
    reads = Reads({**launch.env, **file})
    assert launch.role is not None
    try:
        settings = ROLES[launch.role](reads)
    except SystemExit as refused:
        pytest.fail(f"{launch.where}: videocopies {launch.role} would refuse to start: {refused}")
    return settings, reads.read


def role_problems(launch: Launch, token_file: Path) -> list[str]:
    settings, read = role_settings(launch, token_file)
    problems = [f"{launch.where}: {launch.role} does not read {name}"
                for name in sorted(n for n in launch.env if NAME.fullmatch(n) and n not in read)]
    if launch.role == "control" and len(settings.password) < 8:
        problems.append(f"{launch.where}: control refuses a VIDEOCOPIES_CONTROL_PASSWORD under 8 characters")
    server = getattr(settings, "webhook", None) or settings  # edge listens only for its webhook
    listens, host = getattr(server, "port", None), getattr(server, "host", None)
    problems += [f"{launch.where}: port {port}, but {launch.role} listens on {listens}"
                 for port in launch.ports if port != listens]
    if launch.ports and launch.unit is None and host in LOOPBACK:
        problems.append(f"{launch.where}: {launch.role} listens on {host}, out of reach of its published port")
    core, url = getattr(settings, "core", None), urlsplit(getattr(getattr(settings, "core", None), "url", ""))
    if core and url.scheme == "http" and url.hostname not in LOOPBACK and not core.allow_plain_http:
        problems.append(f"{launch.where}: plain http to {core.url} is refused without ALLOW_PLAIN_HTTP")
    return problems


def urls_in(test: list[str] | str) -> list[tuple[int, str]]:
    """The port and path of every URL a health check asks for."""
    return [(int(port), path or "/") for port, path in re.findall(r"https?://[\w.-]+:(\d+)(/[\w/.-]*)?", str(test))]


def filled(value: Any) -> str:
    return re.sub(r"\$\{[^}]*\}", SECRET, str(value)) if str(value) else SECRET


def dockerfile() -> dict[str, list[str]]:
    instructions: dict[str, list[str]] = {}
    for line in re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text()).splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            instructions.setdefault(keyword.upper(), []).append(rest.strip())
    return instructions


def script_commands(text: str) -> Iterator[list[str]]:
    """Each `videocopies ...` of a shell script, up to the next operator or redirection."""
    for line in text.splitlines():
        words = shlex.split(line, comments=True) if "videocopies" in line else []
        for i, word in enumerate(words):
            if word == "videocopies":
                rest = words[i + 1:]
                stop = next((j for j, w in enumerate(rest) if w in {"||", "&&", ";", "|", ">", ">>", "<"}), len(rest))
                yield rest[:stop]


def compose_launches() -> Iterator[Launch]:
    for name, service in yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"].items():
        if "videocopies" not in str(service.get("image", "")):
            continue
        image_env = [pair.split("=", 1) for line in dockerfile().get("ENV", []) for pair in shlex.split(line)]
        env = {**dict(image_env), **{k: filled(v) for k, v in (service.get("environment") or {}).items()}}
        probe = urls_in(service.get("healthcheck", {}).get("test", ""))
        published = [*service.get("ports", []), *service.get("expose", [])]
        ports = [int(str(p).split(":")[-1].split("/")[0]) for p in published]
        if "command" in service:
            yield Launch(f"compose.yaml {name}", service["command"], env, [*ports, *(p for p, _ in probe)],
                         [path for _, path in probe])
        for volume in service.get("volumes", []):  # a script mounted as the entrypoint
            script = DEPLOY / volume.split(":")[0]
            if volume.split(":")[1] in service.get("entrypoint", []):
                yield from (Launch(f"compose.yaml {name} ({script.name})", argv, env)
                            for argv in script_commands(script.read_text()))


def env_file(path: Path) -> tuple[dict[str, str], set[str]]:
    """Its assignments (an empty value is a secret to fill in), and the names in commented examples."""
    lines = path.read_text().splitlines()
    assigned = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    examples = {m for line in lines if line.startswith("#") for m in re.findall(rf"\b({NAME.pattern})=", line)}
    return {k: filled(v) for k, v in assigned.items()}, examples


def unit_launches() -> Iterator[Launch]:
    for path in sorted((DEPLOY / "systemd").glob("*.service")):
        text = path.read_text().replace("%i", "1").replace("%d", "/run/credentials")
        entries: dict[str, list[str]] = {}
        for line in text.splitlines():
            if "=" in line and not line.startswith(("#", ";", "[")):
                key, _, value = line.partition("=")
                entries.setdefault(key.strip(), []).append(value.strip())
        env: dict[str, str] = {}
        for file in entries.get("EnvironmentFile", []):
            env.update(env_file(DEPLOY / "systemd" / Path(file.lstrip("-")).name)[0])
        env.update(pair.split("=", 1) for value in entries.get("Environment", []) for pair in shlex.split(value))
        binary, *argv = shlex.split(entries["ExecStart"][0])
        assert Path(binary).name == "videocopies", f"{path.name} runs {binary}"
        yield Launch(path.name, argv, env, unit=entries)


def launches() -> list[Launch]:
    return [*compose_launches(), *unit_launches()]


@pytest.fixture
def token(tmp_path: Path) -> Path:
    """Stands in for the token file a node's VIDEOCOPIES_NODE_TOKEN_FILE names."""
    (tmp_path / "token").write_text("a-node-token")
    return tmp_path / "token"


def test_every_command_is_one_the_cli_takes() -> None:
    assert json.loads(dockerfile()["ENTRYPOINT"][0]) == ["videocopies"]
    assert {launch.role for launch in launches()} >= set(ROLES)
    assert [why for launch in launches() if (why := cli_refuses(launch.argv))] == []


def test_every_variable_set_is_one_settings_reads() -> None:
    named = {n for launch in launches() for n in launch.env if n.startswith("VIDEOCOPIES_")}
    named |= {n for path in (DEPLOY / "systemd").glob("*.env") for n in env_file(path)[1]}
    assert named and unknown_variables(named) == set()


def test_each_role_gets_what_it_requires_reads_what_it_is_given_and_listens_where_probed(token: Path) -> None:
    assert [p for launch in launches() if launch.role for p in role_problems(launch, token)] == []
    sources = (ROOT / "src/videocopies/adapters/http").rglob("*.py")
    routes = {path for source in sources for path in re.findall(r'\.get\(\s*"(/[^"]*)"', source.read_text())}
    assert [(launch.where, path) for launch in launches() for path in launch.probes if path not in routes] == []


def test_the_image_exposes_only_ports_roles_listen_on_by_default() -> None:
    defaults = {CoreSettings.from_env("postgresql://", {"VIDEOCOPIES_QUOTE_SECRET": SECRET}).port,
                ControlSettings.from_env({}).port}
    exposed = {int(port) for line in dockerfile()["EXPOSE"] for port in line.split()}
    assert exposed and exposed <= defaults
    assert dockerfile()["USER"] != ["root"]


def balanced() -> dict[str, tuple[int, list[tuple[str, int]]]]:
    """Each balancer service in compose: the port its HAProxy binds and the host:port of each
    server behind it, from the configuration file the service mounts."""
    found = {}
    for name, service in yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"].items():
        if not str(service.get("image", "")).startswith("haproxy:"):
            continue
        (mounted,) = [v.split(":")[0] for v in service["volumes"] if v.endswith("haproxy.cfg:ro")]
        config = (DEPLOY / mounted).read_text()
        (bind,) = re.findall(r"^\s*bind \S*:(\d+)", config, re.M)
        servers = [(host, int(port)) for host, port in re.findall(r"^\s*server \S+ ([\w.-]+):(\d+)", config, re.M)]
        found[name] = (int(bind), servers)
    return found


def test_nodes_in_compose_reach_a_service_that_listens_there(token: Path) -> None:
    """Straight to a core, or to a balancer whose every server is a core listening there."""
    by_name = {launch.where.split()[-1]: launch for launch in compose_launches()}
    ports = {name: role_settings(launch, token)[0].port for name, launch in by_name.items() if launch.role == "core"}
    balancers = balanced()
    assert all(servers and all(ports.get(host) == port for host, port in servers)
               for _, servers in balancers.values()), balancers
    ports |= {name: bind for name, (bind, _) in balancers.items()}
    urls = {launch.where: urlsplit(launch.env["VIDEOCOPIES_CORE_URL"])
            for launch in by_name.values() if "VIDEOCOPIES_CORE_URL" in launch.env}
    assert urls and {where: (url.hostname, url.port) for where, url in urls.items()
                     if ports.get(url.hostname or "") != url.port} == {}


def test_compose_runs_two_cores_behind_the_balancer(token: Path) -> None:
    cores = [launch.where.split()[-1] for launch in compose_launches() if launch.role == "core"]
    assert len(cores) == 2
    assert [sorted(host for host, _ in servers) for _, servers in balanced().values()] == [sorted(cores)]


def test_units_stop_by_sigterm_in_the_time_the_role_needs_and_write_only_their_own_paths(token: Path) -> None:
    retry_for_s = WorkerNodeSettings.from_env({"VIDEOCOPIES_NODE_TOKEN": "t"}).retry_for_s
    for launch in (launch for launch in launches() if launch.unit is not None):
        unit, (settings, _) = launch.unit, role_settings(launch, token)
        assert unit["Restart"] == ["on-failure"] and unit["KillSignal"] == ["SIGTERM"], launch.where
        assert unit["ProtectSystem"] == ["strict"] and unit["PrivateTmp"] == ["yes"], launch.where
        if launch.role == "worker":  # the worker stops its FFmpeg and reports the job back itself
            assert unit["KillMode"] == ["mixed"] and float(unit["TimeoutStopSec"][0]) > retry_for_s, launch.where
        paths = [getattr(settings, "work_dir", None), getattr(settings, "store_dir", None),
                 getattr(getattr(settings, "inventory", None), "parent", None)]
        writable = [Path(p) for p in unit.get("ReadWritePaths", [])]
        writable += [Path("/var/lib") / p for p in unit.get("StateDirectory", [])]
        unwritable = [p for p in paths if p is not None and not any(p.is_relative_to(w) for w in writable)]
        assert unwritable == [], f"{launch.where}: ProtectSystem=strict leaves {unwritable} read-only"
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"].values()
    workers = [s for s in services if s.get("command") == ["worker"]]
    assert workers and all(float(s["stop_grace_period"].rstrip("s")) > retry_for_s for s in workers)


@pytest.mark.parametrize("argv", [["cores"], ["db", "migrate"], ["nodes", "add", "w", "--role", "boss"]])
def test_the_cli_check_refuses_what_the_cli_refuses(argv: list[str]) -> None:
    assert cli_refuses(argv) is not None


def test_the_variable_checks_refuse_a_name_no_setting_reads(token: Path) -> None:
    assert unknown_variables({"VIDEOCOPIES_CORE_PROT", "VIDEOCOPIES_START_VALID_DAYS"}) == {"VIDEOCOPIES_CORE_PROT"}
    worker = Launch("by hand", ["worker"], {"VIDEOCOPIES_NODE_TOKEN": "t", "VIDEOCOPIES_QUOTE_SECRET": SECRET})
    assert role_problems(worker, token) == ["by hand: worker does not read VIDEOCOPIES_QUOTE_SECRET"]
