import ArgumentParser
import AssentModel
import AssentServer
import Foundation

/// Prints failures as `error: CODE: message` on standard error and exits with a code that means something.
enum CLIFailure {
    static func reporting(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as AssentServerError {
            fail(code: error.code.rawValue, message: error.message, exitCode: exitCode(forStatus: error.status))
        } catch let error as OperatorClient.Failure {
            fail(code: error.code, message: error.message, exitCode: error.exitCode)
        }
    }

    /// The exit code for an HTTP status of the server's answer, the same for `assent admin` and `assent token`:
    /// a request the server finds malformed is a usage error (2).
    static func exitCode(forStatus status: Int) -> Int32 {
        switch status {
        case 400, 413: 2
        case 404: 3
        case 401, 403: 4
        case 409: 5
        default: 1
        }
    }

    /// The code both CLIs print when the server cannot be reached (exit 6).
    static let unreachableCode = "ERR_UNREACHABLE"

    /// The sentence both CLIs print when the server at `url` cannot be reached.
    static func unreachable(_ url: String, _ error: (any Error)?) -> String {
        "Cannot reach \(url): is the server running and the URL right?"
            + (error.map { " (\($0.localizedDescription))" } ?? "")
    }

    static func fail(code: String, message: String, exitCode: Int32) -> Never {
        FileHandle.standardError.write(Data("error: \(code): \(message)\n".utf8))
        Foundation.exit(exitCode)
    }
}
