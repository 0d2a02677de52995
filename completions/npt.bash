_npt() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="npt"
                ;;
            npt,bulk)
                cmd="npt__subcmd__bulk"
                ;;
            npt,compare)
                cmd="npt__subcmd__compare"
                ;;
            npt,completions)
                cmd="npt__subcmd__completions"
                ;;
            npt,demo)
                cmd="npt__subcmd__demo"
                ;;
            npt,help)
                cmd="npt__subcmd__help"
                ;;
            npt,http)
                cmd="npt__subcmd__http"
                ;;
            npt,lab)
                cmd="npt__subcmd__lab"
                ;;
            npt,lifetime)
                cmd="npt__subcmd__lifetime"
                ;;
            npt,man)
                cmd="npt__subcmd__man"
                ;;
            npt,merge)
                cmd="npt__subcmd__merge"
                ;;
            npt,monitor)
                cmd="npt__subcmd__monitor"
                ;;
            npt,mtu)
                cmd="npt__subcmd__mtu"
                ;;
            npt,ping)
                cmd="npt__subcmd__ping"
                ;;
            npt,probe)
                cmd="npt__subcmd__probe"
                ;;
            npt,report)
                cmd="npt__subcmd__report"
                ;;
            npt,run)
                cmd="npt__subcmd__run"
                ;;
            npt,serve)
                cmd="npt__subcmd__serve"
                ;;
            npt,setup)
                cmd="npt__subcmd__setup"
                ;;
            npt,trace)
                cmd="npt__subcmd__trace"
                ;;
            npt__subcmd__help,bulk)
                cmd="npt__subcmd__help__subcmd__bulk"
                ;;
            npt__subcmd__help,compare)
                cmd="npt__subcmd__help__subcmd__compare"
                ;;
            npt__subcmd__help,completions)
                cmd="npt__subcmd__help__subcmd__completions"
                ;;
            npt__subcmd__help,demo)
                cmd="npt__subcmd__help__subcmd__demo"
                ;;
            npt__subcmd__help,help)
                cmd="npt__subcmd__help__subcmd__help"
                ;;
            npt__subcmd__help,http)
                cmd="npt__subcmd__help__subcmd__http"
                ;;
            npt__subcmd__help,lab)
                cmd="npt__subcmd__help__subcmd__lab"
                ;;
            npt__subcmd__help,lifetime)
                cmd="npt__subcmd__help__subcmd__lifetime"
                ;;
            npt__subcmd__help,man)
                cmd="npt__subcmd__help__subcmd__man"
                ;;
            npt__subcmd__help,merge)
                cmd="npt__subcmd__help__subcmd__merge"
                ;;
            npt__subcmd__help,monitor)
                cmd="npt__subcmd__help__subcmd__monitor"
                ;;
            npt__subcmd__help,mtu)
                cmd="npt__subcmd__help__subcmd__mtu"
                ;;
            npt__subcmd__help,ping)
                cmd="npt__subcmd__help__subcmd__ping"
                ;;
            npt__subcmd__help,probe)
                cmd="npt__subcmd__help__subcmd__probe"
                ;;
            npt__subcmd__help,report)
                cmd="npt__subcmd__help__subcmd__report"
                ;;
            npt__subcmd__help,run)
                cmd="npt__subcmd__help__subcmd__run"
                ;;
            npt__subcmd__help,serve)
                cmd="npt__subcmd__help__subcmd__serve"
                ;;
            npt__subcmd__help,setup)
                cmd="npt__subcmd__help__subcmd__setup"
                ;;
            npt__subcmd__help,trace)
                cmd="npt__subcmd__help__subcmd__trace"
                ;;
            npt__subcmd__help__subcmd__lab,check)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__check"
                ;;
            npt__subcmd__help__subcmd__lab,daemon)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__daemon"
                ;;
            npt__subcmd__help__subcmd__lab,down)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__down"
                ;;
            npt__subcmd__help__subcmd__lab,exec)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__exec"
                ;;
            npt__subcmd__help__subcmd__lab,run)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__run"
                ;;
            npt__subcmd__help__subcmd__lab,set)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__set"
                ;;
            npt__subcmd__help__subcmd__lab,status)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__status"
                ;;
            npt__subcmd__help__subcmd__lab,up)
                cmd="npt__subcmd__help__subcmd__lab__subcmd__up"
                ;;
            npt__subcmd__lab,check)
                cmd="npt__subcmd__lab__subcmd__check"
                ;;
            npt__subcmd__lab,daemon)
                cmd="npt__subcmd__lab__subcmd__daemon"
                ;;
            npt__subcmd__lab,down)
                cmd="npt__subcmd__lab__subcmd__down"
                ;;
            npt__subcmd__lab,exec)
                cmd="npt__subcmd__lab__subcmd__exec"
                ;;
            npt__subcmd__lab,help)
                cmd="npt__subcmd__lab__subcmd__help"
                ;;
            npt__subcmd__lab,run)
                cmd="npt__subcmd__lab__subcmd__run"
                ;;
            npt__subcmd__lab,set)
                cmd="npt__subcmd__lab__subcmd__set"
                ;;
            npt__subcmd__lab,status)
                cmd="npt__subcmd__lab__subcmd__status"
                ;;
            npt__subcmd__lab,up)
                cmd="npt__subcmd__lab__subcmd__up"
                ;;
            npt__subcmd__lab__subcmd__help,check)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__check"
                ;;
            npt__subcmd__lab__subcmd__help,daemon)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__daemon"
                ;;
            npt__subcmd__lab__subcmd__help,down)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__down"
                ;;
            npt__subcmd__lab__subcmd__help,exec)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__exec"
                ;;
            npt__subcmd__lab__subcmd__help,help)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__help"
                ;;
            npt__subcmd__lab__subcmd__help,run)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__run"
                ;;
            npt__subcmd__lab__subcmd__help,set)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__set"
                ;;
            npt__subcmd__lab__subcmd__help,status)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__status"
                ;;
            npt__subcmd__lab__subcmd__help,up)
                cmd="npt__subcmd__lab__subcmd__help__subcmd__up"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        npt)
            opts="-h -V --help --version serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__bulk)
            opts="-P -t -d -i -b -s -C -q -4 -6 -h --streams --direction --duration --interval --rate --size --timeout --token --ca --insecure --congestion --threads --json --format --quiet --ipv4 --ipv6 --bind --dscp --ecn --tos --via --via-user --segment --start-at --run-id --metrics --metrics-linger --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --streams)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -P)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --direction)
                    COMPREPLY=($(compgen -W "up down both" -- "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -t)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --congestion)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -C)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --segment)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --start-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-linger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__compare)
            opts="-h --baseline --theoretical --hops --runs --out-dir --json --markdown --html --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --baseline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --theoretical)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hops)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --markdown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --html)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__completions)
            opts="-h --help bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__demo)
            opts="-d -h --duration --pps --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help)
            opts="serve probe demo run http ping bulk trace lifetime mtu setup merge compare report monitor lab completions man help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__bulk)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__compare)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__demo)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__http)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab)
            opts="check up down status set exec run daemon"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__daemon)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__down)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__exec)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__run)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__set)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lab__subcmd__up)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__lifetime)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__merge)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__monitor)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__mtu)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__ping)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__probe)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__run)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__setup)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__help__subcmd__trace)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__http)
            opts="-c -d -H -m -k -q -4 -6 -h --connections --duration --rate --new-conn --http2 --http2-fallback --streams --host --header --method --body --body-file --insecure --timeout --cold-start --cold-start-port --ready-timeout --threads --json --format --quiet --ipv4 --ipv6 --bind --dscp --ecn --tos --via --via-user --segment --start-at --run-id --metrics --metrics-linger --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --connections)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --streams)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -H)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --method)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --body)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --body-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cold-start)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cold-start-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ready-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --segment)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --start-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-linger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab)
            opts="-h --help check up down status set exec run daemon help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__check)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__daemon)
            opts="-h --seed --link-threads --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__down)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__exec)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help)
            opts="check up down status set exec run daemon help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__check)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__daemon)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__down)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__exec)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__run)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__set)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__status)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__help__subcmd__up)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__run)
            opts="-h --seed --link-threads --runs --out-dir --json --markdown --html --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --markdown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --html)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__set)
            opts="-h --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__status)
            opts="-h --json --since --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lab__subcmd__up)
            opts="-h --seed --link-threads --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__lifetime)
            opts="-q -h --max --resolution --token --via --via-user --json --format --quiet --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resolution)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__man)
            opts="-h --out-dir --list --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__merge)
            opts="-h --json --format --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__monitor)
            opts="-h --target --every --store --listen --token --vantage --check --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --every)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --vantage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__mtu)
            opts="-q -h --max --timeout --token --via --via-user --json --format --quiet --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__ping)
            opts="-c -i -W -s -q -4 -6 -h --count --interval --timeout --size --echo --setup --raw --token --ca --insecure --json --format --quiet --packets --ipv4 --ipv6 --bind --dscp --ecn --tos --via --via-user --from --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -W)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --packets)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__probe)
            opts="-n -d -s -q -4 -6 -h --config --mode --pps --interval --warmup --warmup-interval --ping-pong --count --duration --clients --threads --size --fill --verify --raw --owd --token --stamp-key --loss-timeout --report-every --report-every-packets --behind-threshold --rx-stamp --spin --json --format --quiet --packets --ipv4 --ipv6 --bind --dscp --ecn --tos --reply-dscp --reply-ecn --via --via-user --under-load --load-streams --load-direction --load-rate --load-size --load-duration --load-idle --load-recovery --load-congestion --load-ca --load-insecure --segment --start-at --run-id --metrics --metrics-linger --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mode)
                    COMPREPLY=($(compgen -W "interval rate relay" -- "${cur}"))
                    return 0
                    ;;
                --pps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --clients)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fill)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stamp-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loss-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-every)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --report-every-packets)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --behind-threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rx-stamp)
                    COMPREPLY=($(compgen -W "user kernel" -- "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --packets)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reply-dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reply-ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --under-load)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-streams)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-direction)
                    COMPREPLY=($(compgen -W "up down both" -- "${cur}"))
                    return 0
                    ;;
                --load-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-idle)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-recovery)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-congestion)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --load-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --segment)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --start-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-linger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__report)
            opts="-o -h --from --target --since --until --format --output --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --target)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json csv md html" -- "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__run)
            opts="-u -d -q -4 -6 -h --quic --quic-name --ca --insecure --users --duration --ramp-up --arrival-rate --mix --think --seed --token --timeout --interval --pages --rounds --handshake-up --handshake-down --request-up --request-down --pause --resources --doc-down --resource-down --download --upload --chunk --game-length --tick --game-size --loss-timeout --workers --json --format --quiet --ipv4 --ipv6 --bind --dscp --ecn --tos --via --via-user --segment --start-at --run-id --metrics --metrics-linger --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --quic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --quic-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --users)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ramp-up)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --arrival-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --think)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pages)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rounds)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --handshake-up)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --handshake-down)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-up)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-down)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pause)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resources)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --doc-down)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resource-down)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --download)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chunk)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --game-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tick)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --game-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --loss-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --workers)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --segment)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --start-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-linger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__serve)
            opts="-l -h --listen --token --open-limits --raw-echo --limit-local --source-pps --source-mbps --total-pps --total-mbps --max-conns --idle-timeout --io-timeout --http-header-timeout --http-idle-timeout --reply-mbps --log-every --http --tls --http-delay --http1-only --cert --key --quic --quic-cert --quic-key --quic-0rtt --quic-cert-out --stamp --stamp-stateless --stamp-key --metrics --hop-agent --hop-allow --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --source-pps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --source-mbps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --total-pps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --total-mbps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-conns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --io-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-header-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --reply-mbps)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-every)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --http-delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --quic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --quic-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --quic-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --quic-0rtt)
                    COMPREPLY=($(compgen -W "off accept reject" -- "${cur}"))
                    return 0
                    ;;
                --quic-cert-out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stamp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stamp-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hop-allow)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__setup)
            opts="-c -q -h --via --via-user --tls --resume --count --timeout --server-name --json --format --quiet --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --via)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --via-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls)
                    COMPREPLY=($(compgen -W "1.2 1.3" -- "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --server-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        npt__subcmd__trace)
            opts="-c -i -W -s -q -4 -6 -h --hop --through --token --count --interval --timeout --size --ca --insecure --during --mtu --mtu-timeout --json --format --quiet --ipv4 --ipv6 --bind --dscp --ecn --tos --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --hop)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --through)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -W)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --during)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mtu-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dscp)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ecn)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tos)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _npt -o nosort -o bashdefault -o default npt
else
    complete -F _npt -o bashdefault -o default npt
fi
