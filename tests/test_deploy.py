"""docker-compose.yml, the Dockerfile and deploy/nginx.conf, checked against the code they deploy.

No Docker daemon or registry is reachable where these tests run, so neither `docker compose config` nor `docker
build` can validate the files here, and the images themselves cannot be started. What can be checked is: every
AXIOM_* variable the files set is a setting and its value passes that setting's validation; every service, volume
and file a service refers to exists; the settings point at the services that serve them; every long-running service
has a healthcheck whose program its image provides, and the HTTP ones ask real routes — Axiom's and Chroma's
checks are run as they are written against a real Axiom server and a real `chroma run`; the image installs with
`make setup`, has what `make run` needs besides, and serves with `axiom serve` on the port the load balancer uses.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from backend.api.settings import ApiSettings
from backend.cli import build_parser
from backend.config import ENV_PREFIX, Settings
from tests.api.server import RunningServer, serve
from tests.llm.support import free_port
from tests.support.chroma_server import ChromaServer, start_chroma_server

ROOT = Path(__file__).resolve().parent.parent
AXIOM_PORT = 8000
# The programs each image's healthcheck may run: what the image is known to ship. chromadb/chroma 1.x is one
# compiled binary on Debian slim, with bash but no curl, wget or python; nginx:alpine has busybox's wget.
IMAGE_PROGRAMS = {
    "postgres": {"pg_isready"},
    "chromadb/chroma": {"bash"},
    "ollama/ollama": {"ollama"},
    "nginx": {"wget"},
    "build": {"python"},  # Axiom's own image: python:3.11-slim with the virtualenv first on PATH
}
ONE_SHOT_SERVICES = {"ollama-pull"}


# --- reading the files ----------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:?-)(?P<default>[^}]*))?\}")


def _interpolate(value: str) -> str:
    """Compose's interpolation with an empty environment: ${NAME:-default} is its default, $$ a literal $. A
    variable without a default would make `docker compose up` fail on a machine without a .env file."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        assert match.group("op"), f"${{{match.group('name')}}} in docker-compose.yml has no default"
        return match.group("default")

    return _VARIABLE.sub(replace, value)


def _interpolated(node: Any) -> Any:
    if isinstance(node, str):
        return _interpolate(node)
    if isinstance(node, dict):
        return {key: _interpolated(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_interpolated(item) for item in node]
    return node


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _interpolated(yaml.safe_load((ROOT / "docker-compose.yml").read_text()))


@pytest.fixture(scope="module")
def services(compose) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _environment(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {name: str(value) for name, value in environment.items()}


def _healthcheck_command(service: dict[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    if isinstance(test, str):
        return ["sh", "-c", test]
    kind, *command = test
    return ["sh", "-c", command[0]] if kind == "CMD-SHELL" else command


@dataclass(frozen=True)
class Instruction:
    stage: int
    keyword: str
    arguments: str


def _dockerfile() -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined, with the build stage each belongs to."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    instructions, stage = [], -1
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, arguments = line.partition(" ")
        if keyword.upper() == "FROM":
            stage += 1
        instructions.append(Instruction(stage, keyword.upper(), " ".join(arguments.split())))
    return instructions


def _run_commands(instructions: list[Instruction]) -> list[str]:
    """Each RUN's shell commands, split at && (a --mount option is not part of the command)."""
    commands = []
    for instruction in instructions:
        if instruction.keyword == "RUN":
            arguments = re.sub(r"^(--\S+\s+)+", "", instruction.arguments)
            commands += [command.strip() for command in arguments.split("&&")]
    return commands


@dataclass(frozen=True)
class MakeTarget:
    prerequisites: list[str]
    recipe: list[str]


def _makefile() -> dict[str, MakeTarget]:
    """Targets of the Makefile with their prerequisites and recipe lines ($(VENV) and $(BIN) expanded)."""
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+) [:?]?= (.*)$", text, flags=re.MULTILINE))

    def expand(line: str) -> str:
        return re.sub(r"\$\((\w+)\)", lambda match: expand(variables.get(match.group(1), match.group(0))), line)

    targets: dict[str, MakeTarget] = {}
    current: MakeTarget | None = None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            if not line.strip().startswith("#"):
                current.recipe.append(expand(line.strip()))
        elif (rule := re.match(r"^([^\s:=#][^:=]*):(?!=)(.*)$", line)) and not line.startswith("."):
            current = MakeTarget(expand(rule.group(2)).split(), [])
            targets[expand(rule.group(1)).strip()] = current
        elif not line.startswith("\t"):
            current = None
    return targets


# --- settings -------------------------------------------------------------------------------------------------


def _axiom_variables(services: dict[str, dict[str, Any]]) -> dict[str, str]:
    variables = {
        name: value
        for service in services.values()
        for name, value in _environment(service).items()
        if name.startswith(ENV_PREFIX)
    }
    for instruction in _dockerfile():
        if instruction.keyword == "ENV":
            for name, value in re.findall(r"(\w+)=(\S+)", instruction.arguments):
                if name.startswith(ENV_PREFIX):
                    variables[name] = value
    return variables


def test_every_axiom_variable_is_a_setting_and_its_value_passes_its_validation(services):
    variables = _axiom_variables(services)
    assert variables, "docker-compose.yml sets no AXIOM_* variable"
    fields = {settings: {ENV_PREFIX + name.upper(): name for name in settings.model_fields} for settings in
              (Settings, ApiSettings)}
    unknown = sorted(set(variables) - set(fields[Settings]) - set(fields[ApiSettings]))
    assert not unknown, f"not a setting of backend/config.py or backend/api/settings.py: {unknown}"
    for settings, names in fields.items():
        values = {names[name]: value for name, value in variables.items() if name in names}
        settings(_env_file=None, **values)  # raises pydantic's ValidationError, naming the setting


# --- services and what they refer to --------------------------------------------------------------------------


def test_every_service_volume_and_file_a_service_refers_to_exists(compose, services):
    declared_volumes = set(compose.get("volumes") or {})
    declared_networks = set(compose.get("networks") or {})
    used_volumes = set()
    for name, service in services.items():
        depends_on = service.get("depends_on", {})
        for dependency in depends_on if isinstance(depends_on, list) else depends_on.keys():
            assert dependency in services, f"{name} depends on {dependency}, which is no service"
        for network in service.get("networks", []):
            assert network in declared_networks, f"{name} joins network {network}, which is not declared"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (ROOT / source).is_file() or (ROOT / source).is_dir(), f"{name} mounts missing {source}"
            else:
                assert source in declared_volumes, f"{name} mounts volume {source}, which is not declared"
                used_volumes.add(source)
    assert declared_volumes == used_volumes, "a declared volume no service uses"
    assert services["axiom"]["build"] == "." and (ROOT / "Dockerfile").is_file()


def test_two_replicas_sit_behind_the_load_balancer_and_nothing_else_is_published(services):
    assert services["axiom"]["deploy"]["replicas"] == 2
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"lb"}, "only the load balancer publishes a port (the replicas share one)"
    assert [str(port) for port in services["axiom"]["expose"]] == [str(AXIOM_PORT)]
    nginx = (ROOT / "deploy/nginx.conf").read_text()
    assert re.search(rf"^\s*server axiom:{AXIOM_PORT};", nginx, flags=re.MULTILINE)
    assert services["lb"]["depends_on"]["axiom"]["restart"] is True, "nginx must re-read the replicas' addresses"
    assert re.search(r"proxy_pass http://axiom;", nginx)
    # Answers stream (SSE) and uploads are limited by Axiom itself while it reads them.
    for directive in ("proxy_buffering off;", "proxy_request_buffering off;", "client_max_body_size 0;"):
        assert directive in nginx
    assert services["lb"]["ports"] == ["8000:80"] and "listen 80;" in nginx


def test_the_settings_point_at_the_services_that_serve_them(services):
    axiom = _environment(services["axiom"])

    database = urlsplit(axiom["AXIOM_DATABASE_URL"])
    postgres = _environment(services["postgres"])
    assert database.scheme == "postgresql" and (database.hostname, database.port) == ("postgres", 5432)
    assert database.username == postgres["POSTGRES_USER"]
    assert database.password == postgres["POSTGRES_PASSWORD"]
    assert database.path == "/" + postgres["POSTGRES_DB"]

    assert axiom["AXIOM_CHROMA_HOST"] == "chroma" and int(axiom["AXIOM_CHROMA_PORT"]) == 8000

    assert axiom["AXIOM_LLM_PROVIDER"] == "ollama"
    ollama_url = urlsplit(axiom["AXIOM_OLLAMA_BASE_URL"])
    assert (ollama_url.hostname, ollama_url.port) == ("ollama", 11434)
    pull = services["ollama-pull"]
    assert pull["image"] == services["ollama"]["image"]
    assert urlsplit(_environment(pull)["OLLAMA_HOST"]).hostname == "ollama"
    assert _environment(pull)["OLLAMA_MODEL"] == axiom["AXIOM_OLLAMA_MODEL"], "the model pulled is the model asked"
    # Every generation Axiom lets run at once has a slot in Ollama, so questions queue in Axiom (fairly, with the
    # evidence answer past their patience), not in Ollama, where the wait would count against the first token.
    slots = int(_environment(services["ollama"])["OLLAMA_NUM_PARALLEL"])
    assert services["axiom"]["deploy"]["replicas"] * int(axiom["AXIOM_LLM_CONCURRENCY"]) == slots

    # Anything beyond loopback needs keys.
    assert axiom["AXIOM_AUTH"] == "api-key"


def test_a_replica_waits_for_its_servers_within_its_healthchecks_start_period(services):
    """depends_on makes `docker compose up` start the replicas once PostgreSQL and Chroma are healthy; after a
    restart of Docker, containers come back in any order, and a replica waits for them itself
    (backend/startup.py), within the time its healthcheck allows for starting, or exits and is restarted."""
    axiom = services["axiom"]
    for server in ("postgres", "chroma"):
        assert axiom["depends_on"][server]["condition"] == "service_healthy"
    waiting = _environment(axiom)["AXIOM_STARTUP_WAIT_SECONDS"]
    wait = Settings(_env_file=None, startup_wait_seconds=waiting).startup_wait_seconds
    assert 0 < wait < _seconds(axiom["healthcheck"]["start_period"])
    assert axiom["restart"] == "unless-stopped"


def _seconds(duration: str) -> float:
    """A compose duration ("1m30s", "120s") in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    assert parts and "".join(number + unit for number, unit in parts) == duration, duration
    return sum(float(number) * units[unit] for number, unit in parts)


def test_the_chroma_server_and_client_share_a_major_version(services):
    image, tag = services["chroma"]["image"].split(":")
    assert image == "chromadb/chroma"
    assert tag.split(".")[0] == version("chromadb").split(".")[0]


# --- healthchecks ---------------------------------------------------------------------------------------------


def _image_name(service: dict[str, Any]) -> str:
    return "build" if "build" in service else service["image"].split(":")[0]


def test_every_long_running_service_has_a_healthcheck_its_image_can_run(services):
    for name, service in services.items():
        if name in ONE_SHOT_SERVICES:
            assert service["restart"] == "no"
            continue
        program = _healthcheck_command(service)[0]
        assert program in IMAGE_PROGRAMS[_image_name(service)], f"{name}'s image has no {program}"
        dependants = [other for other in services.values() if name in other.get("depends_on", {})]
        for dependant in dependants:
            assert dependant["depends_on"][name]["condition"] == "service_healthy"


def _health_route(services: dict[str, dict[str, Any]], name: str) -> str:
    (url,) = re.findall(r"http://[^'\"\s]+", " ".join(_healthcheck_command(services[name])))
    return urlsplit(url).path


@pytest.fixture(scope="module")
def axiom_server(build_app_services, tmp_path_factory) -> Iterator[RunningServer]:
    services = build_app_services(tmp_path_factory.mktemp("deploy-axiom"))
    try:
        with serve(services) as running:
            yield running
    finally:
        services.database.dispose()  # not close(): its reader and model are the session's, shared by later tests


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory) -> Iterator[ChromaServer]:
    server = start_chroma_server(tmp_path_factory.mktemp("deploy-chroma"))
    try:
        yield server
    finally:
        server.stop()


def _run_healthcheck(command: list[str], port: int) -> int:
    """The command as the container would run it, against ``port`` instead of the container's own."""
    if command[0] == "python":
        command = [sys.executable, *command[1:]]
    command = [part.replace(f"127.0.0.1:{AXIOM_PORT}", f"127.0.0.1:{port}") for part in command]
    command = [part.replace(f"/dev/tcp/127.0.0.1/{AXIOM_PORT}", f"/dev/tcp/127.0.0.1/{port}") for part in command]
    return subprocess.run(command, check=False, capture_output=True, timeout=30).returncode


def _port(url: str) -> int:
    return urlsplit(url).port


@pytest.mark.slow
def test_the_replica_and_load_balancer_healthchecks_ask_the_health_route(services, axiom_server):
    for name in ("axiom", "lb"):
        path = _health_route(services, name)
        response = httpx.get(axiom_server.url + path, timeout=60)
        assert response.status_code == 200, f"{name}'s healthcheck asks {path}: {response.status_code}"
        assert response.json()["status"] in ("ok", "degraded")


@pytest.mark.slow
def test_the_replica_healthcheck_passes_on_a_running_server_and_fails_without_one(services, axiom_server):
    command = _healthcheck_command(services["axiom"])
    assert _run_healthcheck(command, _port(axiom_server.url)) == 0
    assert _run_healthcheck(command, free_port()) != 0


@pytest.mark.slow
def test_the_chroma_healthcheck_passes_on_a_real_chroma_server_and_fails_elsewhere(services, chroma_server, axiom_server):
    command = _healthcheck_command(services["chroma"])
    assert "/api/v2/heartbeat" in command[-1]
    assert _run_healthcheck(command, chroma_server.port) == 0
    # An HTTP server without the route (404) and a port nobody listens on are not a healthy Chroma.
    assert _run_healthcheck(command, _port(axiom_server.url)) != 0
    assert _run_healthcheck(command, free_port()) != 0


@pytest.mark.parametrize(("present", "calls"), [(True, ["show"]), (False, ["show", "pull"])])
def test_the_model_is_pulled_only_when_ollama_lacks_it(services, tmp_path, present, calls):
    """So a restart without the network still starts Axiom. A stand-in `ollama` program (no Ollama can run here)
    records its calls and knows the model or not."""
    pull = services["ollama-pull"]
    log = tmp_path / "calls"
    fake = tmp_path / "ollama"
    fake.write_text(f'#!/bin/sh\necho "$1 $2" >> {log}\n[ "$1" = pull ] || [ {str(present).lower()} = true ]\n')
    fake.chmod(0o755)
    environment = {"PATH": f"{tmp_path}:/usr/bin:/bin", **_environment(pull)}
    result = subprocess.run([*pull["entrypoint"], *pull["command"]], env=environment, check=False, timeout=30)
    assert result.returncode == 0
    model = _environment(services["axiom"])["AXIOM_OLLAMA_MODEL"]
    assert log.read_text().splitlines() == [f"{call} {model}" for call in calls]


def test_postgres_is_ready_only_once_it_listens_on_tcp_as_the_user_axiom_connects_as(services):
    command = _healthcheck_command(services["postgres"])
    options = dict(zip(command[1::2], command[2::2], strict=True))
    database = urlsplit(_environment(services["axiom"])["AXIOM_DATABASE_URL"])
    assert options == {"-h": "127.0.0.1", "-U": database.username, "-d": database.path.lstrip("/")}


# --- the image ------------------------------------------------------------------------------------------------


def test_the_image_installs_with_make_setup_from_the_files_it_reads():
    instructions = _dockerfile()
    build = [instruction for instruction in instructions if instruction.stage == 0]
    commands = _run_commands(build)
    assert "make setup" in commands
    setup_index = next(i for i, instruction in enumerate(build) if "make setup" in instruction.arguments)
    copied = [
        source.rstrip("/")
        for instruction in build[:setup_index] if instruction.keyword == "COPY"
        for source in instruction.arguments.split()[:-1]
    ]
    makefile = _makefile()
    (done,) = makefile["setup"].prerequisites
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = [*makefile[done].prerequisites, pyproject["project"]["readme"]]
    for path in needed:
        assert any(path == source or path.startswith(source + "/") for source in copied), (
            f"`make setup` reads {path}, which the Dockerfile does not copy before running it"
        )
    # The runtime stage takes the virtualenv `make setup` made.
    final = [instruction for instruction in instructions if instruction.stage == 1]
    assert any(instruction.arguments == "--from=build /app/.venv /app/.venv" for instruction in final)


def test_the_image_has_what_make_run_needs_besides_setup():
    """A target `make run` depends on (a system package, say) is run in the final image: `make TARGET` or its
    recipe's commands."""
    makefile = _makefile()
    final_commands = _run_commands([instruction for instruction in _dockerfile() if instruction.stage == 1])
    for target in makefile["run"].prerequisites:
        if target == "setup":
            continue
        ran = f"make {target}" in final_commands or all(line in final_commands for line in makefile[target].recipe)
        assert ran, f"`make run` needs `make {target}`; the Dockerfile's final stage does not run it"


def test_the_image_serves_axiom_on_the_port_the_load_balancer_uses():
    (cmd,) = [instruction for instruction in _dockerfile() if instruction.keyword == "CMD"]
    argv = yaml.safe_load(cmd.arguments)  # the JSON (exec) form
    assert argv[:2] == ["axiom", "serve"]
    parsed = build_parser().parse_args(argv[1:])
    assert (parsed.host, parsed.port) == ("0.0.0.0", AXIOM_PORT)
    (expose,) = [instruction for instruction in _dockerfile() if instruction.keyword == "EXPOSE"]
    assert expose.arguments == str(AXIOM_PORT)


def test_the_image_is_the_python_the_project_requires():
    (default,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", default)
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"] == ">=3.11"
    froms = [instruction.arguments for instruction in _dockerfile() if instruction.keyword == "FROM"]
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]


def test_state_secrets_and_the_local_virtualenv_stay_out_of_the_image():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "data/", ".env"} <= ignored
    final = [instruction for instruction in _dockerfile() if instruction.stage == 1]
    assert any(instruction.keyword == "COPY" and instruction.arguments == ". /app" for instruction in final)
