# Sourced by .ci/run and .ci/flake: installs the programs the tests need,
# starts the services when they are down, and exports the variables the
# tests read, so that both run the tests in the same environment.
# CI_TEST is the CI test command.

pg_up()    { pg_isready -q -h 127.0.0.1; }
maria_up() { mariadb-admin -h127.0.0.1 -uroot ping >/dev/null 2>&1; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 ping 2>/dev/null)" = PONG ]; }

# --- tools the tests need (installed when missing) --------------------------
# knotd: the RFC 2136 provider's tests run against a real Knot DNS server.
# chromium: the dashboard's browser test drives headless Chromium.
missing=()
command -v knotd >/dev/null 2>&1 || missing+=(knot)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ "${#missing[@]}" -gt 0 ]; then
	echo "installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || true
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# ---------------------------------------------------------------------------

# Start whichever service is down, with the commands the machine image uses
# (docs/testing.md lists the addresses the tests expect).
pg_up    || pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
maria_up || start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
redis_up || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no

# Wait (bounded) until all three answer.
for i in $(seq 1 60); do
	if pg_up && maria_up && redis_up; then break; fi
	if [ "$i" -eq 60 ]; then
		echo "services did not come up within 60 s:" >&2
		pg_up || echo "  PostgreSQL down" >&2
		maria_up || echo "  MariaDB down" >&2
		redis_up || echo "  Redis down" >&2
		exit 1
	fi
	sleep 1
done

export PETSTORE_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
export PETSTORE_TEST_MYSQL='mysql://root@127.0.0.1:3306/test'
export PETSTORE_TEST_REDIS='redis://127.0.0.1:6379/0'
export PETSTORE_TEST_REQUIRE_SERVICES=1

CI_TEST=(go test -race -count=1 -timeout 20m ./...)
