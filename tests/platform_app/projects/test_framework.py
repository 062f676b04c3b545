"""Framework detection on real fixture repositories (made with the git CLI, served over HTTP), through the HTTP
API."""
import json

import pytest

pytestmark = pytest.mark.django_db


def pkg(deps=None, dev=None, scripts=None, **extra):
    return json.dumps({"name": "app", "dependencies": deps or {}, "devDependencies": dev or {},
                       "scripts": scripts or {}, **extra})


FIXTURES = {
    "static": ({"index.html": "<h1>x</h1>"}, "static", "static", "index.html"),
    "vite": ({"package.json": pkg(dev={"vite": "^5"}, scripts={"build": "vite build"}), "vite.config.js": "",
              "package-lock.json": "{}"}, "vite", "static", "package.json: dependency vite"),
    "nextjs": ({"package.json": pkg(deps={"next": "14", "react": "18"}, scripts={"build": "next build",
                                                                                 "start": "next start"})},
               "nextjs", "node", "package.json: dependency next"),
    "astro": ({"package.json": pkg(deps={"astro": "4"}), "yarn.lock": ""}, "astro", "static",
              "package.json: dependency astro"),
    "cra": ({"package.json": pkg(deps={"react-scripts": "5"}, scripts={"build": "react-scripts build"})},
            "create-react-app", "static", "package.json: dependency react-scripts"),
    "django": ({"manage.py": "import django\n", "requirements.txt": "Django==5.2\ngunicorn\n",
                "mysite/wsgi.py": "application = None\n"}, "django", "python", "manage.py"),
    "flask": ({"app.py": "from flask import Flask\napp = Flask(__name__)\n", "requirements.txt": "flask\n"},
              "flask", "python", "app.py"),
    "fastapi": ({"main.py": "from fastapi import FastAPI\napp = FastAPI()\n", "requirements.txt": "fastapi\n"},
                "fastapi", "python", "main.py"),
    "node": ({"package.json": pkg(scripts={"start": "node server.js"}), "server.js": ""}, "node", "node",
             "package.json"),
    "python": ({"app.py": "print('hi')\n"}, "python", "python", "app.py"),
    "docker": ({"Dockerfile": "FROM scratch\n", "index.html": "x"}, "docker", "docker", "Dockerfile"),
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_detect_each_rule(name, alice, as_user, make_repo):
    files, framework, runtime, evidence = FIXTURES[name]
    url = make_repo(files)
    res = as_user(alice).post("/v1/framework/detect", {"url": url}, format="json")
    assert res.status_code == 201, res.json()
    body = res.json()
    assert (body["framework"], body["runtime"]) == (framework, runtime)
    assert evidence in body["evidence"]
    assert body["branch"] == "main" and len(body["commitSha"]) == 40


def test_detected_commands(alice, as_user, make_repo):
    client = as_user(alice)
    vite = client.post("/v1/framework/detect", {"url": make_repo(FIXTURES["vite"][0])}, format="json").json()
    assert (vite["installCommand"], vite["buildCommand"], vite["outputDirectory"]) == ("npm ci", "npm run build",
                                                                                       "dist")
    django = client.post("/v1/framework/detect", {"url": make_repo(FIXTURES["django"][0])}, format="json").json()
    assert django["installCommand"] == "pip install -r requirements.txt"
    assert django["startCommand"] == "gunicorn mysite.wsgi --bind 0.0.0.0:$PORT"
    fastapi = client.post("/v1/framework/detect", {"url": make_repo(FIXTURES["fastapi"][0])}, format="json").json()
    assert fastapi["startCommand"] == "uvicorn main:app --host 0.0.0.0 --port $PORT"


def test_detect_in_root_directory_and_branch(alice, as_user, make_repo):
    url = make_repo({"README.md": "x", "web/index.html": "<h1>"}, branches=("dev",))
    client = as_user(alice)
    res = client.post("/v1/framework/detect", {"url": url, "branch": "dev", "rootDirectory": "web"}, format="json")
    assert res.status_code == 201 and res.json()["framework"] == "static" and res.json()["branch"] == "dev"
    assert client.post("/v1/framework/detect", {"url": url, "rootDirectory": "../"}, format="json").status_code == 400
    assert client.post("/v1/framework/detect", {"url": url, "rootDirectory": "nope"}, format="json").status_code == 400
    ghost = client.post("/v1/framework/detect", {"url": url, "branch": "ghost"}, format="json")
    assert ghost.status_code == 400 and ghost.json()["code"] == "git_branch_not_found"


def test_discover_monorepo(alice, as_user, make_repo):
    url = make_repo({
        "package.json": pkg(workspaces=["apps/*"]),
        "apps/web/package.json": pkg(deps={"next": "14"}),
        "apps/docs/package.json": pkg(deps={"astro": "4"}),
        "apps/docs/src/pages/index.astro": "",
        "services/api/requirements.txt": "fastapi\n",
        "services/api/main.py": "from fastapi import FastAPI\napp = FastAPI()\n",
        "node_modules/left-pad/package.json": pkg(),
    })
    res = as_user(alice).post("/v1/framework/discover", {"url": url}, format="json")
    assert res.status_code == 201
    apps = {a["path"]: a["framework"] for a in res.json()["apps"]}
    assert apps == {"apps/docs": "astro", "apps/web": "nextjs", "services/api": "fastapi"}


def test_repo_info(alice, as_user, make_repo):
    url = make_repo({"a": "b"}, default="trunk", branches=("dev", "feature/x"))
    res = as_user(alice).post("/v1/framework/repo-info", {"url": url}, format="json")
    assert res.status_code == 201
    body = res.json()
    assert body["defaultBranch"] == "trunk"
    assert body["branches"] == ["dev", "feature/x", "trunk"]
    assert len(body["headCommit"]) == 40


def test_unreadable_repository(alice, as_user, git_server):
    client = as_user(alice)
    for path in ("repo-info", "detect", "discover"):
        res = client.post(f"/v1/framework/{path}", {"url": f"{git_server.base}/nope.git"}, format="json")
        assert res.status_code == 400 and res.json()["code"] == "git_unreachable", path
        assert res.json()["message"] == "This address cannot be reached from the platform."


def test_needs_authentication_and_strict_input(api, alice, as_user):
    assert api.post("/v1/framework/detect", {"url": "file:///x"}, format="json").status_code == 401
    assert as_user(alice).post("/v1/framework/detect", {"url": "file:///x", "x": 1}, format="json").status_code == 400
