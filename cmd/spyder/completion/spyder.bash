# bash completion for spyder: `source <(spyder completion bash)`, or save
# it as /etc/bash_completion.d/spyder. It asks spyder itself what can come
# next, so it always matches the installed binary.
_spyder_complete() {
	local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n' words
	# spyder prints the flags or commands that may stand where cur is, or
	# nothing where a file name or another value goes.
	words=$("${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:COMP_CWORD}" --generate-bash-completion 2>/dev/null)
	if [[ -n $words ]]; then
		COMPREPLY=($(compgen -W "$words" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -o filenames -F _spyder_complete spyder
