#!/bin/bash -eu
# ClusterFuzzLite: the build is Fuzz/oss-fuzz/build.sh (every target, dictionary and seed corpus).
exec "$SRC/swift-sdl/Fuzz/oss-fuzz/build.sh"
