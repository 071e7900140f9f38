import time

from tests.web.conftest import INDEX_RUN, PASSWORD


def test_flow(app_client, tokens, prod):
    client, service = app_client
    op = tokens["operator"]
    r = client.post("/api/targets", json={"name": "prod", "dsn": prod}, headers=op)
    assert r.status_code == 201, r.text
    r = client.post("/api/runs", json={"target": "prod", **INDEX_RUN}, headers=op)
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    for _ in range(300):
        run = client.get(f"/api/runs/{run_id}", headers=op).json()
        if run["state"] not in ("queued", "running"):
            break
        time.sleep(0.5)
    print(run)
    recs = client.get("/api/recommendations", headers=op).json()
    print(recs)
    assert PASSWORD not in str(recs)
