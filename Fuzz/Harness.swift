import Foundation

/// The libFuzzer entry point of every target: the check named by `FuzzTarget.check` (defined in the target's own
/// file) runs on each input; a broken property stops the run like a crash, and libFuzzer saves the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = start.map { Data(bytes: $0, count: count) } ?? Data()
    do {
        try FuzzTarget.check(input)
    } catch {
        fatalError("\(error)")
    }
    return 0
}
