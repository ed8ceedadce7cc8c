"""Every nginx site of deploy/ loads in the nginx Debian ships (1.22 in Debian 12), as written.

``http2 on;`` (nginx >= 1.25.1) made it refuse deploy/nginx.conf, the cluster's
balancer and its git server. ``nginx -t`` on each file, with only what a test
must change: certificates (self-signed), log folders, and ``listen`` on free
loopback ports (``nginx -t`` binds them).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from engines import REPO, _nginx_argv, _nginx_prelude, free_port, have

CLUSTER = REPO / "deploy" / "cluster"

NGINX_FILES = ["nginx.conf", "cluster/nginx-balancer.conf", "cluster/git-server-https.nginx.conf",
               "cluster/git-server-http.nginx.conf"]


@pytest.mark.parametrize("name", NGINX_FILES)
def test_every_nginx_site_of_deploy_loads_in_debians_nginx(name, tmp_path):
    if not have("nginx", "openssl"):
        pytest.skip("needs nginx and openssl (installed by .ci/system-deps as root)")
    conf = tmp_path / "etc" / "nginx"
    (conf / "snippets").mkdir(parents=True)
    shutil.copy(CLUSTER / "git-server-locations.conf", conf / "snippets" / "wikimem-git.conf")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=t",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    site = (REPO / "deploy" / name).read_text()
    site = re.sub(r"/etc/letsencrypt/live/[^/]+/fullchain\.pem", str(cert), site)
    site = re.sub(r"/etc/letsencrypt/live/[^/]+/privkey\.pem", str(key), site)
    site = site.replace("/var/log/nginx/", f"{tmp_path}/")
    # nginx -t binds what it listens on: free loopback ports instead of 80, 443 or a private address
    site = re.sub(r"(?m)^(\s*listen )([^;]*);", lambda m: f"{m.group(1)}127.0.0.1:{free_port()}"
                  + "".join(f" {flag}" for flag in ("ssl", "http2") if flag in m.group(2).split()) + ";", site)
    (conf / "site.conf").write_text(site)
    (conf / "nginx.conf").write_text(_nginx_prelude(tmp_path) + "    include site.conf;\n}\n")
    done = subprocess.run([*_nginx_argv(tmp_path, conf / "nginx.conf"), "-t"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
