# fish completion for holdfast(1): commands, subcommands, options, and file
# names where an operand or an option's argument is a path.
#
# The option lists follow each (sub)command's --help, as in
# completions/holdfast.bash; tests/term/help.sh checks them against it and
# against the parser. A new option goes into __holdfast_opts (with a
# trailing = when it takes an argument).

# The options of "COMMAND SUBCOMMAND" (or "COMMAND"); NAME= takes an argument.
function __holdfast_opts -a key
    switch $key
        case 'session take'
            printf '%s\n' --lane= --owner= --stale= --file= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --etcd-timeout=
        case 'session release'
            printf '%s\n' --lane= --owner= --stale= --file= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --etcd-timeout=
        case 'session renew'
            printf '%s\n' --lane= --owner= --file= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --etcd-timeout=
        case 'session status'
            printf '%s\n' --file= --stale= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --etcd-timeout=
        case 'session assert-held'
            printf '%s\n' --file= --stale= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --etcd-timeout=
        case 'session race'
            printf '%s\n' --procs= --runs= --naive --json --dir=
        case 'lock acquire'
            printf '%s\n' -n -w= -E= -v --verbose --stale= --max-hold= --pid= --lease= --shared --slots= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case 'lock release'
            printf '%s\n' --token= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case 'lock check'
            printf '%s\n' --token= --fence= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case 'lock renew'
            printf '%s\n' --token= --max-hold= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case 'lock status'
            printf '%s\n' -v --verbose --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case 'scope list' 'scope effective' 'scope reap'
            printf '%s\n' --json
        case 'scope register'
            printf '%s\n' -w= --wait= --pid= --socket= --from= --lease= --reason= --json
        case 'scope renew'
            printf '%s\n' --lease= --generation= --json
        case 'scope release'
            printf '%s\n' --generation= --json
        case 'scope check'
            printf '%s\n' --staged --pod= --generation= --json
        case run
            printf '%s\n' --session= --lock= --shared --slots= --scope= --name= -n --nonblock -w= --wait= --timeout= -E= --conflict-exit-code= -v --verbose -c= --command= --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case edit
            printf '%s\n' -n --nonblock -w= --wait= --timeout= -E= --conflict-exit-code= --init= --allow-empty --max-hold= -v --verbose --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --ttl= --etcd-timeout=
        case selftest
            printf '%s\n' --json
        case list
            printf '%s\n' --depth= --all-scopes --json --backend= --etcd-user= --etcd-password-file= --etcd-ca= --etcd-timeout=
        case flock
            printf '%s\n' -x -e --exclusive -s --shared -n --nonblock --nb --nonblocking -w= --wait= --timeout= -E= --conflict-exit-code= -o --close -c= --command= -F --no-fork -u --unlock --verbose --fcntl --start= --length= --fd=
    end
end

# Is the command line "holdfast CMD [SUB] ..."?
function __holdfast_is -a cmd sub
    set -l t (commandline -opc)
    test (count $t) -ge 2; and test "$t[2]" = "$cmd"; or return 1
    test -z "$sub"; and return 0
    test (count $t) -ge 3; and test "$t[3]" = "$sub"
end

# flock: has FILE|DIR|FD been given (its options end there, as flock(1)'s)?
# With "cmd": is the word being completed the CMD right after it?
function __holdfast_flock_file -a want
    set -l t (commandline -opc)
    set -l i 3
    while test $i -le (count $t)
        switch $t[$i]
            case -w --wait --timeout -E --conflict-exit-code
                set i (math $i + 2)
                continue
            case '-*'
            case '*'
                test "$want" = cmd; or return 0
                test $i -eq (count $t)
                return
        end
        set i (math $i + 1)
    end
    return 1
end

complete -c holdfast -n 'test (count (commandline -opc)) -eq 1' -f -a 'session lock scope run edit selftest flock list'
complete -c holdfast -n 'test (count (commandline -opc)) -eq 1' -s h -l help
complete -c holdfast -n 'test (count (commandline -opc)) -eq 1' -s V -l version
for cmd in session lock scope
    set -l subs
    switch $cmd
        case session
            set subs take release renew status assert-held race
        case lock
            set subs acquire release renew check status
        case scope
            set subs register renew release list effective check reap
    end
    complete -c holdfast -n "__holdfast_is $cmd; and test (count (commandline -opc)) -eq 2" -f -a "$subs"
    for sub in $subs
        set -a __holdfast_keys "$cmd $sub"
    end
end
set -a __holdfast_keys run edit selftest flock list

for key in $__holdfast_keys
    set -l cond "__holdfast_is $key"
    if test $key = flock
        set cond "__holdfast_is flock; and not __holdfast_flock_file"
    else if not string match -q '* *' -- $key
        set cond "__holdfast_is $key; and not contains -- -- (commandline -opc)"
    end
    for o in (__holdfast_opts $key) -h --help -V --version
        test -n "$o"; or continue
        set -l name (string replace -r '=$' '' -- $o)
        set -l req
        string match -q -- '*=' $o; and set req -r
        if string match -q -- '--*' $name
            complete -c holdfast -n $cond -l (string sub -s 3 -- $name) $req
        else
            complete -c holdfast -n $cond -s (string sub -s 2 -- $name) $req
        end
    end
end
set -e __holdfast_keys
# flock FILE CMD [ARG...] | FILE -c CMD
complete -c holdfast -n '__holdfast_is flock; and __holdfast_flock_file cmd' -f -a '(__fish_complete_command)'
complete -c holdfast -n '__holdfast_is flock; and __holdfast_flock_file cmd' -s c -l command -r
# list DIR: directories only
complete -c holdfast -n '__holdfast_is list' -f -a '(__fish_complete_directories)'
