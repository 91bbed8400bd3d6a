package machineid_file

// mutant names a defect built into a store on purpose, to show that the
// crash test (crash_test.go) catches a store that loses its mark to a
// power loss. Only this package's tests set a store's mutant: New leaves it
// none, and nothing outside the package can reach the field.
type mutant uint8

const (
	noMutant         mutant = iota
	mutantNoSync            // write does not fsync the file it wrote the mark in
	mutantNoDirSync         // syncDir does nothing, so a new file's name is not durable
	mutantLateMark          // raise grants a mark and writes it at the next call, not before granting it
	mutantOneSlot           // write overwrites the slot holding the mark, not the other one
	mutantNoTakeSync        // Take writes without first fsyncing the mark it read
)

// mutants are the mutants by the names the tests give them.
var mutants = map[string]mutant{
	"nosync":     mutantNoSync,
	"nodirsync":  mutantNoDirSync,
	"latemark":   mutantLateMark,
	"oneslot":    mutantOneSlot,
	"notakesync": mutantNoTakeSync,
}
