#!/bin/bash -eu
# Builds every fuzz target of Fuzz/ into $OUT, the way OSS-Fuzz and ClusterFuzzLite build a
# project (base-builder-swift image: `precompile_swift` sets $SWIFTFLAGS for $SANITIZER, the
# fuzzer and a static Swift runtime; it sets no other flags variable). For each target: the
# binary, its dictionary, its seed corpus (Fuzz/Corpus/TARGET, plus the seeds Fuzz/make-corpus
# builds when ../shared is next to the checkout) and its libFuzzer options. Run from anywhere;
# the checkout is found from here.
. precompile_swift
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# $SWIFTFLAGS carries `-Xswiftc -sanitize=fuzzer,$SANITIZER`, which SwiftPM places after its
# own -sanitize flags, so Swift code gets both (see Fuzz/run). It gives SwiftPM only
# --sanitize=$SANITIZER, though, and SwiftPM then links each executable with `--defsym
# main=TARGET_main`, a symbol no target has under -DFUZZING (the link fails); with
# --sanitize=fuzzer it leaves `main` to libFuzzer, as in Fuzz/run.
flags=(-c release $SWIFTFLAGS --sanitize=fuzzer -Xswiftc -DFUZZING --scratch-path .build-oss-fuzz)
# By name: `swift build` alone also links the executables of the package under test (sdl,
# sdl-rpc-gen), whose `main` clashes with libFuzzer's at the link.
for source in Sources/Fuzz*; do
  [ "${source#Sources/}" = FuzzSupport ] || swift build "${flags[@]}" --product "${source#Sources/}"
done
bin=$(swift build "${flags[@]}" --show-bin-path)
if [ -d ../../shared ]; then
  ./make-corpus .build-corpus
fi
for source in Sources/Fuzz*; do
  target=${source#Sources/}
  [ "$target" != FuzzSupport ] || continue
  cp "$bin/$target" "$OUT/"
  if [ -f "Dictionaries/$target.dict" ]; then
    cp -L "Dictionaries/$target.dict" "$OUT/$target.dict"
  fi
  seeds=$(mktemp -d)
  for folder in "Corpus/$target" ".build-corpus/$target"; do
    if [ -d "$folder" ]; then
      cp "$folder"/* "$seeds"/ 2>/dev/null || true
    fi
  done
  (cd "$seeds" && zip -q -r "$OUT/${target}_seed_corpus.zip" . || true)
  rm -rf "$seeds"
  printf '[libfuzzer]\nmax_len = 8192\ntimeout = 10\n' > "$OUT/$target.options"
done
