# bash completion for holdfast(1): commands, subcommands, options, and file
# names where an operand or an option's argument is a path.
#
# The option lists follow each (sub)command's --help; tests/term/help.sh
# checks them against it and against the parser. A new option goes into
# _holdfast_opts (and _holdfast_argopts when it takes an argument), and into
# completions/_holdfast (zsh) and completions/holdfast.fish the same way.

_holdfast_cmds="session lock scope run edit selftest flock list"
_holdfast_common="-h --help -V --version"

# The subcommands of a command (none for run, edit, selftest, flock, list).
_holdfast_subs() {
	case $1 in
	session) echo "take release renew status assert-held race" ;;
	lock) echo "acquire release renew check status" ;;
	scope) echo "register renew release list effective check reap" ;;
	esac
}

# The options of "COMMAND SUBCOMMAND" (or "COMMAND" alone).
_holdfast_opts() {
	local o
	case $1 in
	"session take") o="--lane --owner --stale --file --json --backend --etcd-user --etcd-password-file --etcd-ca --etcd-timeout" ;;
	"session release") o="--lane --owner --stale --file --json --backend --etcd-user --etcd-password-file --etcd-ca --etcd-timeout" ;;
	"session renew") o="--lane --owner --file --json --backend --etcd-user --etcd-password-file --etcd-ca --etcd-timeout" ;;
	"session status") o="--file --stale --json --backend --etcd-user --etcd-password-file --etcd-ca --etcd-timeout" ;;
	"session assert-held") o="--file --stale --json --backend --etcd-user --etcd-password-file --etcd-ca --etcd-timeout" ;;
	"session race") o="--procs --runs --naive --json --dir" ;;
	"lock acquire") o="-n -w -E -v --verbose --stale --max-hold --pid --lease --shared --slots --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	"lock release") o="--token --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	"lock renew") o="--token --max-hold --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	"lock check") o="--token --fence --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	"lock status") o="-v --verbose --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	"scope register") o="-w --wait --pid --socket --from --lease --reason --json" ;;
	"scope renew") o="--lease --generation --json" ;;
	"scope release") o="--generation --json" ;;
	"scope list" | "scope effective" | "scope reap") o="--json" ;;
	"scope check") o="--staged --pod --generation --json" ;;
	run) o="--session --lock --shared --slots --scope --name -n --nonblock -w --wait --timeout -E --conflict-exit-code -v --verbose -c --command --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	edit) o="-n --nonblock -w --wait --timeout -E --conflict-exit-code --init --allow-empty --max-hold -v --verbose --json --backend --etcd-user --etcd-password-file --etcd-ca --ttl --etcd-timeout" ;;
	selftest) o="--json" ;;
	list) o="--depth --all-scopes --json --backend --etcd-user --etcd-password-file --etcd-ca --etcd-timeout" ;;
	flock) o="-x -e --exclusive -s --shared -n --nonblock --nb --nonblocking -w --wait --timeout -E --conflict-exit-code -o --close -c --command -F --no-fork -u --unlock --verbose --fcntl --start --length --fd" ;;
	*) return 1 ;;
	esac
	echo "$o $_holdfast_common"
}

# Options that take an argument: "file" (complete a path), "dir", or "word"
# (nothing to offer).
_holdfast_argopt() {
	case $1 in
	--file | --socket | --lock | --scope | --etcd-password-file | --etcd-ca) echo file ;;
	--dir) echo dir ;;
	--lane | --owner | --stale | --procs | --runs | -w | --wait | --timeout | -E | \
		--conflict-exit-code | --max-hold | --pid | --token | --from | --pod | \
		--generation | --session | --name | -c | --command | --init | --depth | --backend | \
		--etcd-user | --ttl | --etcd-timeout | --fence | --lease | --slots) echo word ;;
	esac
}

_holdfast() {
	local cur prev words cword
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi
	COMPREPLY=()
	if ((cword == 1)); then
		COMPREPLY=($(compgen -W "$_holdfast_cmds $_holdfast_common" -- "$cur"))
		return
	fi
	local cmd=${words[1]} sub="" key i
	local subs
	subs=$(_holdfast_subs "$cmd")
	if [[ -n $subs ]]; then
		if ((cword == 2)); then
			COMPREPLY=($(compgen -W "$subs $_holdfast_common" -- "$cur"))
			return
		fi
		sub=${words[2]}
		key="$cmd $sub"
	else
		key=$cmd
	fi
	# after "--" (run, edit): CMD and its arguments
	for ((i = 2; i < cword; i++)); do
		if [[ ${words[i]} == -- ]]; then
			COMPREPLY=($(compgen -c -- "$cur"))
			((i + 1 == cword)) || COMPREPLY=($(compgen -f -- "$cur"))
			return
		fi
	done
	# flock: FILE|DIR|FD, then CMD [ARG...] (or -c CMD): options end at the
	# first operand (FILE), as flock(1)'s
	if [[ $cmd == flock ]]; then
		local file=0
		for ((i = 2; i < cword; i++)); do
			case ${words[i]} in
			-w | --wait | --timeout | -E | --conflict-exit-code) ((i++)) ;;
			-*) ;;
			*)
				file=$i
				break
				;;
			esac
		done
		if ((file > 0)); then
			if ((cword == file + 1)); then
				if [[ $cur == -* ]]; then
					COMPREPLY=($(compgen -W "-c --command" -- "$cur"))
				else
					COMPREPLY=($(compgen -c -- "$cur"))
				fi
			elif [[ ${words[file + 1]} != -c && ${words[file + 1]} != --command ]]; then
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	fi
	case $(_holdfast_argopt "$prev") in
	file)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	word) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_holdfast_opts "$key")" -- "$cur"))
		return
	fi
	# operands: PATH, FILE, DIR, SPEC (a path first); list's DIR
	if [[ $cmd == list ]]; then
		COMPREPLY=($(compgen -d -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _holdfast holdfast
