#!/usr/bin/env python3
"""Unpacks a Debian package's files into a folder, as `dpkg -x DEB DIR` does, for a machine
without dpkg (tools/gpu/session.sh). A .deb is an `ar` archive whose data.tar.{xz,gz,zst,}
member holds the files; zstd members need the `zstandard` module (Debian 12 uses xz)."""
import io
import sys
import tarfile


def ar_members(data: bytes):
    """Yields (name, bytes) of each member of a System V / GNU `ar` archive."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive (no !<arch> magic)")
    offset = 8
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        name = header[0:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        offset += 60
        yield name, data[offset:offset + size]
        offset += size + (size % 2)  # members are 2-byte aligned


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: unpack_deb.py PACKAGE.deb DIR", file=sys.stderr)
        return 2
    deb, target = sys.argv[1], sys.argv[2]
    with open(deb, "rb") as file:
        members = dict(ar_members(file.read()))
    names = [name for name in members if name.startswith("data.tar")]
    if not names:
        print(f"{deb}: no data.tar member (members: {', '.join(members)})", file=sys.stderr)
        return 1
    payload = members[names[0]]
    if names[0].endswith(".zst"):
        import zstandard  # only where the package uses zstd
        payload = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload)).read()
    with tarfile.open(fileobj=io.BytesIO(payload)) as archive:
        # The "tar" filter (where Python has it) refuses absolute paths and links out of the folder.
        options = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
        archive.extractall(target, **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
