#!/bin/bash -eu
# Builds every fuzz target of Fuzz/ into $OUT, the way OSS-Fuzz and ClusterFuzzLite build a
# project (base-builder-swift image: `precompile_swift` sets $SWIFT6_2FLAGS, for packages of
# tools version 6, with $SANITIZER, the fuzzer and a static Swift runtime). For each target: the
# binary, its dictionary, its seed corpus (Fuzz/Corpus/TARGET, plus the seeds Fuzz/make-corpus
# builds when ../shared is next to the checkout) and its libFuzzer options. Run from anywhere;
# the checkout is found from here.
. precompile_swift
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Not $SWIFTFLAGS: its -parse-as-library leaves an executable target without the entry point
# SwiftPM links it against (the replay `main` is compiled out under -DFUZZING).
flags=(-c release $SWIFT6_2FLAGS -Xswiftc -DFUZZING --scratch-path .build-oss-fuzz)
if [ "$SANITIZER" != coverage ]; then
  # As in Fuzz/run: `--sanitize=fuzzer --sanitize=X` gives swiftc two -sanitize flags and the
  # Swift frontend keeps the last; one combined flag, last, gives Swift code both.
  flags+=(-Xswiftc "-sanitize=fuzzer,$SANITIZER")
fi
swift build "${flags[@]}"
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
