# Scenario: a short fault campaign. scripts/chaos.sh with 20 trials (seed $SPACE_CHAOS_SEED,
# default the day of the year, so CI walks through seeds over time and a failure can be re-run
# with its seed): kill -9 of the VMM, the CLI or the credential helper at a random moment of
# create, exec, pause, checkpoint, resume, branch, destroy and template build, and SIGSTOP of a
# VMM; after each, the checks chaos.sh describes (list agrees with reality, records parse,
# completed checkpoints restore, commands against a hung VMM end clearly, nothing is left).
# The long campaign (100 trials) is `scripts/chaos.sh`; its table is in RELIABILITY.md.
source "$(dirname "$0")/lib.sh"
shared_template base
seed=${SPACE_CHAOS_SEED:-$((10#$(date +%j)))}
echo "chaos seed $seed (re-run: SPACE_CHAOS_SEED=$seed)"
SPACE_BIN=$SPACE_BIN "$SRC/scripts/chaos.sh" --trials 20 --seed "$seed" || fail "the fault campaign failed (seed $seed)"
echo "PASS"
