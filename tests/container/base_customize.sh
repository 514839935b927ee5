#!/bin/sh
# mmdebstrap customize hook of the container tests' base image ($1: the new root), the local
# stand-in of python:3.X-slim and debian:bookworm-slim (container_env.py builds it).
set -eu
root="$1"

# the host's extra CA certificates (a TLS-inspecting proxy's, say): pip inside image builds then
# reaches the package index the way the host does
for crt in /usr/local/share/ca-certificates/*.crt; do
    [ -e "$crt" ] && cp "$crt" "$root/usr/local/share/ca-certificates/"
done
chroot "$root" update-ca-certificates >/dev/null

# the Python headers, which the official image has (a build stage adds gcc), without the dev libraries
py=$(chroot "$root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
chroot "$root" sh -c "cd /tmp && apt-get download -qq libpython$py-dev" 2>/dev/null
dpkg-deb --fsys-tarfile "$root"/tmp/libpython"$py"-dev_*.deb | tar -x -C "$root" ./usr/include
rm -f "$root"/tmp/libpython"$py"-dev_*.deb

# pip installs system-wide, as in the official image
rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
