"""Shared fixtures: real PostgreSQL (pytest-django), real Redis, real Celery workers."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

# Playwright's sync API runs an event loop in the test thread; Django's ORM is still safe
# there because the loop never runs our code concurrently.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402
import redis  # noqa: E402

from paintenv.render_config import RendererConfig, disabled_features_switch  # noqa: E402
from paintenv.renderer import Renderer  # noqa: E402
from tests.support.painter import built_once, models_dir, painter_path, start_build, wait_for_build  # noqa: E402
from tests.support.tiny_vlm import ensure_built as ensure_tiny_vlms  # noqa: E402
from tests.support.vlm_server import VLMServer  # noqa: E402
from tests.support.workers import REPO, BeatProcess, WorkerFleet, WorkerProcess  # noqa: E402

# A test that uses one of these starts Chromium, a Celery worker, a live server or a model
# build: it is `slow` (and `browser` when it drives the studio), so `make test-fast` skips it.
SLOW_FIXTURES = {
    "chromium", "signed_in_page", "live_server", "start_worker", "start_beat", "worker_env", "embedded_env",
    "tiny_model", "painter_model", "tiny_vl_model", "tiny_vlms", "vlm_server", "start_vlm_server",
    "renderer", "watchdog_renderer", "short_renderer", "unshadowed_renderer", "in_process", "hostile_renders", "legit_renders",
}
BROWSER_FIXTURES = {"chromium", "signed_in_page"}


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects by these markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if used & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)


def _needs_painter(item) -> bool:
    return "painter_model" in getattr(item, "fixturenames", ())


def _files_in_xdist_order(items: list) -> list:
    """The order of test files that `make test`'s processes start from: first the slow files
    that need no painter, then those that need it (built in the meantime), then the quick files;
    within each, the files with the most tests first. pytest-xdist 3 then sends the files out by
    their number of tests, most first, and this order decides among files of one size. Sent in
    this order instead (`--no-loadscope-reorder`) the processes ended together, but the heavy
    files ran side by side at the start and a hostile render ran past its deadline once
    (docs/testing.md, 2026-12-06)."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def kind(tests: list) -> int:
        if any(_needs_painter(test) for test in tests):
            return 1
        return 0 if any(test.get_closest_marker("slow") for test in tests) else 2

    return [test for tests in sorted(files.values(), key=lambda tests: (kind(tests), -len(tests))) for test in tests]


class _TestOrder:
    """The painter model takes minutes to build: it starts with the session, in the background,
    and the tests that need it run after others (tests/support/painter.py says why this costs no
    wall time): last in one process, after the other slow files under pytest-xdist."""

    # After pytest-django has ordered the tests by database use and `-m` has deselected, and
    # before pytest-xdist sends the worker's collection to the controller, which schedules by
    # position (reordering any later would run other tests than the ones it scheduled).
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if os.environ.get("PYTEST_XDIST_WORKER"):
            items[:] = _files_in_xdist_order(items)
        else:
            items[:] = [item for item in items if not _needs_painter(item)] + [item for item in items if _needs_painter(item)]


def pytest_configure(config):
    config.pluginmanager.register(_TestOrder(), "paintapp-test-order")


def pytest_collection_finish(session):
    if any(_needs_painter(item) for item in session.items) and not session.config.option.collectonly:
        session.config.painter_build = start_build(painter_path())


def pytest_sessionfinish(session, exitstatus):
    # An interrupted session stops its background build (it would only be thrown away).
    build = getattr(session.config, "painter_build", None)
    if build is not None and build.poll() is None:
        build.kill()


# Redis databases reserved for tests, (broker, results) for each pytest-xdist worker: `make test`
# runs the suite in three processes, and each must have its own queues, like its own database
# (pytest-django gives each worker a test database of its own).
TEST_REDIS_DBS = [(15, 14), (7, 6), (5, 4), (3, 2)]


def _test_redis_urls() -> tuple[str, str]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw0", "gw1"... under pytest-xdist
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    broker, result = os.environ.get("PAINTAPP_TEST_BROKER_URL"), os.environ.get("PAINTAPP_TEST_RESULT_URL")
    if broker or result:
        if index:
            raise pytest.UsageError("PAINTAPP_TEST_BROKER_URL/RESULT_URL name one pair of Redis databases: "
                                    "run without pytest-xdist (-n 0) when you set them")
        return broker or "redis://127.0.0.1:6379/15", result or "redis://127.0.0.1:6379/14"
    if index >= len(TEST_REDIS_DBS):
        raise pytest.UsageError(f"at most {len(TEST_REDIS_DBS)} pytest-xdist workers (-n): "
                                "each needs Redis databases of its own")
    broker_db, result_db = TEST_REDIS_DBS[index]
    return f"redis://127.0.0.1:6379/{broker_db}", f"redis://127.0.0.1:6379/{result_db}"


TEST_BROKER_URL, TEST_RESULT_URL = _test_redis_urls()
# Celery reads CELERY_BROKER_URL / CELERY_RESULT_BACKEND from the environment ahead of its app
# configuration: a developer's own (e.g. from a .env) would keep this process on the studio's
# queues while its workers (given the tests' URLs) listen on the tests'.
for _name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session", autouse=True)
def _test_broker():
    """Point Celery at Redis databases reserved for tests (no connection is made here, so
    pure-library tests run on a machine without services)."""
    from paintapp.celery import app

    app.conf.update(broker_url=TEST_BROKER_URL, result_backend=TEST_RESULT_URL)
    yield
    app.close()


@pytest.fixture(scope="session")
def renderer():
    """The one shared warm renderer, for every test that only needs sketches rendered (each
    render gets a fresh browser context, so tests cannot see each other's pages). Tests of
    the renderer's own limits (watchdog, pixel budget, a dead browser) build their own."""
    with Renderer(RendererConfig(timeout_s=30)) as shared:
        yield shared


@pytest.fixture(scope="session")
def tiny_vlms() -> Path:
    """The tiny vision-language models (tests/support/tiny_vlm.py): judge/, hpsv3-base/ and
    HPSv3.safetensors, built once per machine (~20 s) into PAINTAPP_MODELS_DIR."""
    return ensure_tiny_vlms()


@pytest.fixture(scope="session")
def vlm_server(tiny_vlms, tmp_path_factory):
    """`transformers serve` running the tiny judge: a real OpenAI-compatible endpoint whose
    GET /v1/models lists `vlm_server.model`; shared by the session, never stopped by a test."""
    with VLMServer(tiny_vlms / "judge", tmp_path_factory.mktemp("vlm-server") / "serve.log") as server:
        yield server


@pytest.fixture
def start_vlm_server(tiny_vlms, tmp_path):
    """Factory: start_vlm_server() -> a VLMServer of the test's own, which it may stop; all
    stopped at teardown."""
    started: list[VLMServer] = []

    def start() -> VLMServer:
        server = VLMServer(tiny_vlms / "judge", tmp_path / f"vlm-server-{len(started)}.log")
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def no_worker():
    """For tests that send tasks no worker is running to take: afterwards the test Redis
    databases are emptied, so the unanswered tasks never reach a later test's worker."""
    yield
    for url in (TEST_BROKER_URL, TEST_RESULT_URL):
        redis.Redis.from_url(url).flushdb()


@pytest.fixture(scope="session")
def _empty_test_broker():
    """Empty the test Redis databases once, before the first worker starts."""
    for url in (TEST_BROKER_URL, TEST_RESULT_URL):
        redis.Redis.from_url(url).flushdb()


@pytest.fixture(autouse=True)
def _isolated_django_settings(request, tmp_path):
    """For tests that touch Django: their own MEDIA_ROOT (never the studio's) and a fast
    password hasher (PBKDF2 costs ~0.5 s per user here). Pure-library tests are left alone,
    so `paintenv` tests also run with `-p no:django`."""
    uses_django = request.node.get_closest_marker("django_db") or {
        "db", "transactional_db", "client", "settings", "live_server", "django_user_model"
    } & set(request.fixturenames)
    if uses_django:
        settings = request.getfixturevalue("settings")
        # A test with workers shares their MEDIA_ROOT (the fleet's, emptied for it) from its start,
        # before its other fixtures store references and paintings there.
        uses_workers = "worker_env" in request.fixturenames
        settings.MEDIA_ROOT = request.getfixturevalue("worker_fleet").fresh_media() if uses_workers else tmp_path / "media"
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and before it is dropped, an end to the sessions that this
    process's threads left open on it (idle, from persistent connections: CONN_MAX_AGE). Each
    full run found one or two such sessions per test process, and PostgreSQL's DROP DATABASE
    waited 5 s for them, then failed ("is being accessed by other users") and left the database."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@pytest.fixture(scope="session")
def _require_postgresql(django_db_setup, django_db_blocker):
    from django.db import connection

    if connection.vendor != "postgresql" and not os.environ.get("PAINTAPP_ALLOW_SQLITE_TESTS"):
        pytest.fail("Tests run against PostgreSQL: start it (make services) or set DATABASE_URL.")


def database_url_for_workers() -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


# Parked workers a pytest process keeps for later tests (tests/support/workers.py): the common
# kinds (a run's train, render and score workers; the editor's render and score) fit.
PARKED_WORKERS = 6


@pytest.fixture(scope="session")
def worker_fleet(_require_postgresql, tmp_path_factory):
    """The workers tests left idle, parked for a later test that asks for the same kind; stopped
    at the end of the session, before the test database goes."""
    fleet = WorkerFleet(root=tmp_path_factory.mktemp("workers"), broker_url=TEST_BROKER_URL, keep=PARKED_WORKERS)
    yield fleet
    fleet.close()


@pytest.fixture
def worker_env(_require_postgresql, _empty_test_broker, worker_fleet, settings) -> dict[str, str]:
    """The environment a worker subprocess needs to share this test's database and broker. Its
    MEDIA_ROOT is the fleet's (a parked worker is taken again only with the same environment),
    emptied for this test, and this process's too (`_isolated_django_settings`)."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="paintapp.settings",
        DATABASE_URL=database_url_for_workers(),
        CELERY_BROKER_URL=TEST_BROKER_URL,
        CELERY_RESULT_BACKEND=TEST_RESULT_URL,
        PAINTAPP_VAR_DIR=str(worker_fleet.var),
        MEDIA_ROOT=str(settings.MEDIA_ROOT),
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture
def embedded_env(tmp_path) -> dict[str, str]:
    """The environment of the embedded mode (no PostgreSQL, no Redis): SQLite files for the
    database and kombu's SQLAlchemy broker under this test's own folder, migrated."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'studio.sqlite3'}",
        CELERY_BROKER_URL=f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}",
        PAINTAPP_VAR_DIR=str(tmp_path), MEDIA_ROOT=str(tmp_path / "media"),
        DJANGO_SETTINGS_MODULE="paintapp.settings",
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True, timeout=120)
    return env


@pytest.fixture
def start_worker(worker_env, worker_fleet):
    """Factory: start_worker("render", "score") -> a running WorkerProcess (a parked one of the same
    kind, or a new one); at teardown each is parked for a later test if whole and idle, else stopped."""
    started: list[WorkerProcess] = []

    def start(*queues: str, concurrency: int = 1, pool: str = "prefork") -> WorkerProcess:
        worker = worker_fleet.start(queues=queues, concurrency=concurrency, pool=pool, env=worker_env)
        started.append(worker)
        return worker

    yield start
    worker_fleet.release(started)


@pytest.fixture
def start_beat(worker_env, worker_fleet, tmp_path):
    """Celery beat as a deployment runs it, sending the settings' schedule with the workers'
    environment (set `worker_env` first, e.g. TRAINER_REAP_EVERY_S); stopped at teardown. Its
    schedule file (in the fleet's VAR_DIR) starts afresh, as in a test of its own."""
    for schedule in worker_fleet.var.glob("celerybeat-schedule*"):
        schedule.unlink()
    beat = BeatProcess(env=worker_env, log_path=tmp_path / "beat.log")
    yield beat.start
    beat.stop()


@pytest.fixture(scope="session")
def chromium():
    """One headless Debian Chromium for browser tests (Playwright's download is not needed).
    Without the omnibox page headless Chromium preloads into every new context (the renderer's
    OUR_DISABLED_FEATURES): each test opens a context of its own."""
    from django.conf import settings
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=settings.CHROMIUM_PATH,
            headless=True,
            args=["--disable-gpu", "--no-sandbox", "--disable-background-networking", "--disable-component-update",
                  disabled_features_switch()],
        )
        yield browser
        browser.close()


@pytest.fixture
def screenshot():
    """screenshot(page, name): the whole page as PNG into $PAINTAPP_SCREENSHOTS (e.g.
    docs/screenshots, for the README) when that is set; without it nothing is written, so a
    test run leaves the working tree as it was. Quantised to 128 colours to stay small."""
    folder = os.environ.get("PAINTAPP_SCREENSHOTS")

    def take(page, name: str) -> None:
        if folder:
            from PIL import Image

            path = Path(folder) / f"{name}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            image = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
            image.quantize(colors=128).save(path, optimize=True)

    return take


@pytest.fixture
def curator(django_user_model):
    return django_user_model.objects.create_user(username="ada", password="watercolour-2026", is_staff=True)


@pytest.fixture
def signed_in(client, curator):
    """Django's test client, signed in as the curator."""
    client.force_login(curator)
    return client


@pytest.fixture
def signed_in_page(chromium, live_server, curator):
    """A browser page signed in as a curator on the live test server. Its context starts with
    the curator's session cookie, as if the login form had been sent: the form and the pools
    page it lands on would cost two page loads a test (~0.3 CPU s), and the form has a browser
    test of its own (tests/paintapp/test_login_browser.py)."""
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(curator)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                          "url": live_server.url}])
    page = context.new_page()
    # Shown with a failing test's output: what the page itself said.
    page.on("console", lambda message: print(f"[browser {message.type}] {message.text}"))
    page.on("pageerror", lambda error: print(f"[browser error] {error}"))
    yield page
    context.close()


# --- models the project builds (no network), once per session ----------------------------------


@pytest.fixture(scope="session")
def tiny_model() -> str:
    """A fast-to-build model: it runs GRPO mechanics but rarely writes a passing sketch.
    Built once into MODELS_DIR and shared by the test processes (tests only read it)."""
    from demo.tiny_model import QUICK_SPEC, build_tiny_model

    return str(built_once(models_dir() / "tiny-quick-tests", QUICK_SPEC, build_tiny_model))


@pytest.fixture(scope="session")
def painter_model(request) -> str:
    """The demo model's shape with fewer SFT epochs: its sketches pass the gate and often
    render. Built once per machine into MODELS_DIR (~4-5 min of one core), in the background
    from the start of the session (tests/conftest.py); this waits for that build."""
    path = painter_path()
    wait_for_build(getattr(request.config, "painter_build", None), path, timeout_s=1800)
    return str(path)


@pytest.fixture(scope="session")
def tiny_vl_model() -> str:
    """A Qwen3.5-MoE vision-language model (vision tower, routed experts, processor files) of
    ~300K parameters with a one-step SFT (~1 min): it runs the VL training path, not a painter.
    Built once into MODELS_DIR like `tiny_model`."""
    from demo.tiny_vl_model import QUICK_VL_SPEC, build_tiny_vl_model

    return str(built_once(models_dir() / "tiny-vl-tests", QUICK_VL_SPEC, build_tiny_vl_model))


@pytest.fixture
def one_torch_thread():
    """As the trainer sets it on CPU (train_steps), for tests that generate in their own process:
    contended OpenMP threads make generation crawl."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def s3_server():
    """A real S3-compatible server (moto's, in its own process) with the bucket `studio-media`."""
    from tests.support.s3_server import S3Server

    server = S3Server().start()
    yield server
    server.stop()


@pytest.fixture
def s3_storage(s3_server, settings):
    """This test process's default storage is the S3 server's bucket (PAINTAPP_STORAGE=s3)."""
    settings.STORAGE = "s3"
    settings.STORAGES = s3_server.storages(settings.STORAGES["staticfiles"])
    return s3_server
