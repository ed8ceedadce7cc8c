#!/bin/sh
# CGI run by fcgiwrap for every request of the git server (deploy/cluster/git-server-locations.conf):
# push-to-create (a push to a repository that does not exist yet creates it, bare, branch main),
# then git's own smart-HTTP server. Installed as /usr/local/lib/wikimem/git-http-create.cgi (0755):
# docs/guides/git-server.md.
repo="$GIT_PROJECT_ROOT${PATH_INFO%%.git/*}.git"
case "$PATH_INFO$QUERY_STRING" in
  *..*) ;;                                   # never create outside GIT_PROJECT_ROOT
  *git-receive-pack*)
    if [ ! -e "$repo/HEAD" ]; then
      mkdir -p "$repo" && git init -q --bare -b main "$repo" 2>/dev/null || true
    fi ;;
esac
exec git http-backend
