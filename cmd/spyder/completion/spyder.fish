# fish completion for spyder: `spyder completion fish | source`, or save it
# as ~/.config/fish/completions/spyder.fish. It asks spyder itself what can
# come next, so it always matches the installed binary.
function __spyder_complete
    # spyder prints the flags or commands that may stand at the cursor, or
    # nothing where a file name or another value goes.
    set -l args (commandline -opc) (commandline -ct)
    $args[1] $args[2..-1] --generate-bash-completion 2>/dev/null
end
complete -c spyder -f -n '__spyder_complete | string length -q' -a '(__spyder_complete)'
complete -c spyder -F -n 'not __spyder_complete | string length -q'
