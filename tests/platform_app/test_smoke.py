def test_health_answers_ok(api, db):
    resp = api.get("/health")
    assert resp.status_code == 200
    assert resp.json()["status"] == "ok"
