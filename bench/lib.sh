# Shared by the bench scripts (sourced, not run): messages, building Quarry, building a Maven
# project with a JDK 21+ for the Lucene side, finding VictoriaLogs, a free port, and the
# search-benchmark-game corpus.
#
# Before sourcing, set SCRIPT_NAME (prefix of warnings). build_quarry builds
# target/release/quarry at REPO_DIR (unless QUARRY_BIN names a binary) and sets quarry_ok
# (0 when it does not build or $QUARRY is not executable). build_lucene POM NAME sets
# LUCENE_JAVA_HOME (when unset: Temurin 25 if present, else JAVA_HOME, else `java` on PATH),
# JAVA, java_version and lucene_ok (0 when there is no JDK 21+, no mvn, or the build fails).
# find_victorialogs sets VICTORIALOGS (VICTORIALOGS_BIN, else the binary bench/victorialogs.sh
# builds once and caches) and victorialogs_ok (0 when VICTORIALOGS_BIN=none or there is no
# binary). free_port prints a TCP port on 127.0.0.1 that nothing listens on.

log() { printf '\n== %s\n' "$*" >&2; }
warn() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
now() { date +%s.%N; }

# java_major JAVA: the feature release of a java binary (17, 21, 25), empty if it does not run.
java_major() {
    "$1" -XshowSettings:properties -version 2>&1 |
        awk -F' = ' '/java.specification.version/ { sub(/^1\./, "", $2); print $2 }'
}

build_quarry() {
    quarry_ok=1
    if [[ -n ${QUARRY_BIN:-} ]]; then
        log "using quarry from $QUARRY_BIN"
    else
        log "building quarry"
        if ! (cd "$REPO_DIR" && cargo build --release -p quarry); then
            warn "quarry does not build: its figures will be missing"
            quarry_ok=0
        fi
    fi
    if ((quarry_ok)) && [[ ! -x $QUARRY ]]; then
        warn "no quarry binary at $QUARRY: its figures will be missing"
        quarry_ok=0
    fi
}

build_lucene() {
    local pom=$1 name=$2
    lucene_ok=1
    if [[ -z ${LUCENE_JAVA_HOME:-} ]]; then
        if [[ -x /usr/lib/jvm/temurin-25-jdk-amd64/bin/java ]]; then
            LUCENE_JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
        elif [[ -n ${JAVA_HOME:-} ]]; then
            LUCENE_JAVA_HOME=$JAVA_HOME
        elif command -v java >/dev/null; then
            LUCENE_JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
        fi
    fi
    JAVA=${LUCENE_JAVA_HOME:-/nonexistent}/bin/java
    java_version=$([[ -x $JAVA ]] && java_major "$JAVA" || true)
    # Lucene 10 needs Java 21 or newer.
    if [[ -z $java_version || $java_version -lt 21 ]]; then
        warn "no JDK 21+ for Lucene (LUCENE_JAVA_HOME=${LUCENE_JAVA_HOME:-unset}): its figures will be missing"
        lucene_ok=0
    elif ! command -v mvn >/dev/null; then
        warn "no mvn to build $name: its figures will be missing"
        lucene_ok=0
    else
        log "building $name (Java $java_version at $LUCENE_JAVA_HOME)"
        local maven_opts=${MAVEN_OPTS:-}
        # Maven 3.8's bundled Guava uses sun.misc.Unsafe, which JDK 24+ warns about on every build.
        ((java_version >= 23)) && maven_opts+=" --sun-misc-unsafe-memory-access=allow"
        if ! JAVA_HOME=$LUCENE_JAVA_HOME MAVEN_OPTS=$maven_opts mvn -q -f "$pom" package >&2; then
            warn "$name does not build: its figures will be missing"
            lucene_ok=0
        fi
    fi
}

find_victorialogs() {
    victorialogs_ok=1
    VICTORIALOGS=
    if [[ ${VICTORIALOGS_BIN:-} == none ]]; then
        log "VICTORIALOGS_BIN=none: VictoriaLogs left out"
        victorialogs_ok=0
        return 0
    elif [[ -n ${VICTORIALOGS_BIN:-} ]]; then
        VICTORIALOGS=$VICTORIALOGS_BIN
        log "using victoria-logs from $VICTORIALOGS"
    else
        log "building VictoriaLogs (bench/victorialogs.sh; once, then cached)"
        VICTORIALOGS=$("$BENCH_DIR/victorialogs.sh") || VICTORIALOGS=
    fi
    if [[ ! -x $VICTORIALOGS ]]; then
        warn "no victoria-logs binary${VICTORIALOGS:+ at $VICTORIALOGS}: its figures will be missing"
        victorialogs_ok=0
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# game_corpus: the search-benchmark-game corpus ({"id","text"}) at CORPUS, written from WIKI_FILE
# by CORPUS_TOOL (the first ARTICLES articles, or all) once, and reused by later runs while it
# is newer than WIKI_FILE. Its record (docs, bytes) goes to WORK_DIR/corpus.json.
game_corpus() {
    if [[ ! -s $CORPUS || $CORPUS -ot $WIKI_FILE ]]; then
        log "writing the corpus ${ARTICLES:-(all articles)} to $CORPUS"
        local articles_args=()
        [[ -n $ARTICLES ]] && articles_args=(--articles "$ARTICLES")
        "$CORPUS_TOOL" "${articles_args[@]}" "$WIKI_FILE" "$CORPUS.tmp" >"$WORK_DIR/corpus.json"
        mv "$CORPUS.tmp" "$CORPUS"
        cat "$WORK_DIR/corpus.json" >&2
    fi
}
