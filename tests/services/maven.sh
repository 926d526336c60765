# Fetching a Java service's runtime classpath from Maven Central into the shared cache (sourced,
# not run): kafka.sh and zookeeper.sh use it, and so can the next Java service.

# maven_fetch POM_TEMPLATE LIBS WHAT [@TOKEN@=value ...]: unless LIBS/.complete exists, fill the
# tokens into the POM template, copy the runtime dependencies into LIBS with Maven (local
# repository CACHE/m2), and mark LIBS complete. One fetch at a time per cache, even when several
# test runs start together.
maven_fetch() {
  local template=$1 libs=$2 what=$3
  shift 3
  [[ -f $libs/.complete ]] && return 0
  command -v mvn >/dev/null || { echo "Maven (mvn) is needed to fetch $what" >&2; return 1; }
  command -v java >/dev/null || { echo "Java 17+ is needed to run $what" >&2; return 1; }
  mkdir -p "$CACHE"
  local lock
  exec {lock}>"$CACHE/.maven-fetch.lock"
  flock "$lock"
  if [[ -f $libs/.complete ]]; then
    exec {lock}>&-
    return 0
  fi
  local work sed_args=() pair
  work=$(mktemp -d "$CACHE/fetch.XXXXXX")
  for pair in "$@"; do sed_args+=(-e "s|${pair%%=*}|${pair#*=}|g"); done
  sed "${sed_args[@]}" "$template" >"$work/pom.xml"
  echo "fetching $what with Maven into $libs ..."
  if ! (cd "$work" && mvn -q -B -Dmaven.repo.local="$CACHE/m2" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$work/libs") >"$work/mvn.log" 2>&1; then
    cat "$work/mvn.log" >&2
    echo "Maven could not fetch $what" >&2
    rm -rf "$work"
    exec {lock}>&-
    return 1
  fi
  rm -rf "$libs"
  mkdir -p "$(dirname "$libs")"
  mv "$work/libs" "$libs"
  touch "$libs/.complete"
  rm -rf "$work"
  exec {lock}>&-
}
